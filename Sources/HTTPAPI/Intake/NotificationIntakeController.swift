import AppStoreModels
import Application
import Entitlements
import Foundation
import Hummingbird
import Jobs
import Logging
import Metrics
import NIOCore
import PayloadDecoding
import Persistence
import SignedData
import StatementFencing

/// `POST /notifications/apple`: verify the envelope and every nested JWS, then store and enqueue in one committed
/// transaction before answering 200. Apple retries on anything but 2xx, so only failures worth a retry (database
/// down, OCSP unreachable) answer 503.
public struct NotificationIntakeController: Sendable {
    let verifier: SignedDataVerifier
    let inbox: NotificationInbox
    let databaseTimeout: Duration

    public init(verifier: SignedDataVerifier, inbox: NotificationInbox, databaseTimeout: Duration = .seconds(5)) {
        self.verifier = verifier
        self.inbox = inbox
        self.databaseTimeout = databaseTimeout
    }

    public func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.post("/notifications/apple") { request, context in
            try await self.receive(request, context: context)
        }
    }

    struct RequestBody: Decodable {
        var signedPayload: String
    }

    struct Answer: ResponseEncodable {
        var status: String
        var notificationUUID: String?
        var reason: String?
    }

    func receive(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        do {
            let answer = try await process(request, context: context)
            Self.count(answer.status)
            return answer
        } catch let error as APIError {
            Self.count(error.code.description)
            throw error
        }
    }

    /// `storekeeper_intake_notifications_total{status}`: accepted, duplicate, ignored, or the error code answered.
    static func count(_ status: String) {
        Counter(label: "storekeeper_intake_notifications_total", dimensions: [("status", status)]).increment()
    }

    /// `storekeeper_verification_duration_seconds`: envelope and nested JWS, whatever the verdict.
    static let verificationTimer = Timer(label: "storekeeper_verification_duration_seconds", preferredDisplayUnit: .seconds)

    func process(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        let decoded = try await request.decodeJSONBody(
            as: RequestBody.self, otherwise: "body must be a JSON object with a signedPayload string")
        var logger = context.logger
        let verificationStarted = ContinuousClock.now
        let verification: Result<VerifiedNotification, VerificationError>
        do {
            verification = .success(try await verifier.verifyNotification(decoded.signedPayload))
        } catch {
            verification = .failure(error)
        }
        Self.verificationTimer.recordNanoseconds((ContinuousClock.now - verificationStarted).nanoseconds)
        let notification: VerifiedNotification
        switch verification {
        case .success(let verified):
            notification = verified
        case .failure(let error):
            logger.notice("notification rejected", metadata: ["verification.category": "\(error.category.rawValue)"])
            throw Self.apiError(for: error)
        }
        let uuidText = notification.payload.notificationUUID
        logger[metadataKey: "notification.uuid"] = "\(uuidText)"
        if case .ignored(let reason) = verifier.identityVerdict(for: notification) {
            logger.notice("notification ignored", metadata: ["reason": "\(reason)"])
            return Answer(status: "ignored", notificationUUID: uuidText, reason: reason)
        }
        guard let uuid = UUID(text: uuidText) else {
            throw APIError.badRequest("notificationUUID is not a UUID")
        }
        let outcome: NotificationInbox.Outcome
        do {
            outcome = try await withDeadline(databaseTimeout) {
                try await inbox.accept(notification, uuid: uuid, signedPayload: decoded.signedPayload)
            }
        } catch {
            logger.error("notification could not be stored", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError.unavailable("the notification could not be stored; retry later")
        }
        switch outcome {
        case .accepted:
            logger.info("notification accepted", metadata: ["notification.type": "\(notification.payload.notificationType)"])
            return Answer(status: "accepted", notificationUUID: uuidText)
        case .duplicate:
            logger.info("notification duplicate")
            return Answer(status: "duplicate", notificationUUID: uuidText)
        }
    }

    static func apiError(for error: VerificationError) -> APIError {
        switch error.category {
        case .malformed:
            return APIError(.badRequest, code: .malformedSignedPayload, message: error.reason)
        case .certificate, .untrusted, .identity:
            return APIError(.unauthorized, code: .verificationFailed, message: error.reason)
        case .retryable:
            return APIError(.serviceUnavailable, code: .verificationUnavailable, message: error.reason)
        }
    }
}
