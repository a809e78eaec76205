import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Every minute: links the rescinded consents no account was known for to the account of a subscription that now
/// carries their app transaction, and sends each `account.consent_rescinded` — in one transaction, so a link is never
/// stored without its event. The applies link at once where they can; this sweep catches the rest (rows
/// `storekeeper replay --write` filled after an upgrade, which sends no event). Each run looks up every rescission
/// still unlinked — consent of someone with no App Store subscription here stays so — by the subscriptions' index.
public struct ConsentLinkJob: JobHandler {
    public static let jobKind = "consent-link"
    public let kind = Self.jobKind
    private let client: PostgresClient
    private let recorder: EventRecorder?
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, recorder: EventRecorder?, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        // Without events there is nobody to tell: a link made here would be marked done and never sent.
        guard let recorder else { return }
        let now = clock()
        let linked = try await client.withFencedTransaction(logger: logger) { connection in
            let linked = try await ConsentRescissions(logger: logger).linkPending(now: now, on: connection)
            let drafts = linked.compactMap(\.event)
            if !drafts.isEmpty { try await recorder.record(drafts, now: now, on: connection) }
            return linked.count
        }
        if linked > 0 { logger.notice("rescinded consents linked", metadata: ["consent.linked": "\(linked)"]) }
    }

    public static var schedule: PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: 60, maximumCatchUp: 1) { _ in [String: String]() }
    }
}
