import AppStoreModels
import AppStoreServerAPI
import Application
import Entitlements
import Foundation
import Logging
import Persistence
import SignedData

/// Pages Apple's Notification History over a window and sends every notification through the intake's path —
/// verify, identity, store-and-enqueue with dedupe by `notificationUUID` — so whatever was missed is applied by the
/// normal queue and nothing is applied twice. One notification that fails verification is counted and skipped, never
/// blocking the rest.
public struct NotificationHistoryBackfill: Sendable {
    /// What one backfill found.
    public struct Report: Codable, Sendable, Equatable {
        public var pages = 0
        public var found = 0
        public var accepted = 0
        public var duplicates = 0
        public var ignored = 0
        public var rejected = 0
    }

    let serverAPI: AppStoreServerClient
    let verifier: SignedDataVerifier
    let inbox: NotificationInbox
    let logger: Logger

    public init(serverAPI: AppStoreServerClient, verifier: SignedDataVerifier, inbox: NotificationInbox, logger: Logger) {
        self.serverAPI = serverAPI
        self.verifier = verifier
        self.inbox = inbox
        self.logger = logger
    }

    /// How far back Apple keeps history: 180 days in production, 30 in the sandbox.
    public static func retention(of environment: AppStoreEnvironment) -> TimeInterval {
        (environment == .production ? 180 : 30) * 86_400
    }

    public func run(_ query: NotificationHistoryQuery) async throws -> Report {
        var report = Report()
        var token: String?
        repeat {
            let page = try await serverAPI.notificationHistory(query, paginationToken: token)
            report.pages += 1
            for signedPayload in page.signedPayloads {
                report.found += 1
                try await accept(signedPayload, into: &report)
            }
            token = page.hasMore ? page.paginationToken : nil
        } while token != nil
        logger.info(
            "notification history read",
            metadata: [
                "history.environment": "\(query.environment.rawValue)", "history.found": "\(report.found)",
                "history.accepted": "\(report.accepted)", "history.duplicates": "\(report.duplicates)",
            ])
        return report
    }

    private func accept(_ signedPayload: String, into report: inout Report) async throws {
        let notification: VerifiedNotification
        do {
            notification = try await verifier.verifyNotification(signedPayload)
        } catch {
            report.rejected += 1
            logger.warning("history notification rejected", metadata: ["verification.category": "\(error.category.rawValue)"])
            return
        }
        guard case .accepted = verifier.identityVerdict(for: notification), let uuid = UUID(text: notification.payload.notificationUUID) else {
            report.ignored += 1
            return
        }
        switch try await inbox.accept(notification, uuid: uuid, signedPayload: signedPayload) {
        case .accepted: report.accepted += 1
        case .duplicate: report.duplicates += 1
        }
    }
}
