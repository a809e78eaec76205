import Credits
import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// The one code path that settles a grant or a one-time purchase after its facts changed, inside the caller's
/// transaction with the account's lock held: post what its credit rules owe (``SourceCredits``), store its events
/// with the account's status as the transaction leaves it, and schedule the next time the clock changes it (its
/// start, its end, its next credit window) so that its events and grants come then.
public struct SourceSettlement: Sendable {
    let credits: CreditLedger
    let recorder: EventRecorder?
    let queue: any JobScheduling
    let announcements: SourceAnnouncements

    public init(credits: CreditLedger, recorder: EventRecorder?, queue: any JobScheduling) {
        self.credits = credits
        self.recorder = recorder
        self.queue = queue
        self.announcements = SourceAnnouncements(logger: credits.logger)
    }

    /// Settles `record` of `account` at `now`; returns the ledger operations posted.
    @discardableResult
    public func settle(
        _ record: EntitlementRecord, account: AccountID, now: Date, cause: EventCause, on connection: PostgresConnection
    ) async throws -> [LedgerOperation] {
        let catalogue = credits.catalogue
        let ledger = try await credits.snapshot(ofSource: record.id, on: connection)
        let operations = SourceCredits.operationsDue(record, account: account, catalogue: catalogue, ledger: ledger, now: now)
        let source = catalogue.source(of: record, at: now)
        let environment = record.environment ?? SourceChanges.environment
        // What the services were told before, exchanged for what they are told now: events follow the change, not the
        // event store, which forgets after its retention window.
        var announced: SourceAnnouncement?
        if let announcement = SourceChanges.announcement(of: source) {
            announced = try await announcements.exchange(record.id, for: announcement, at: now, on: connection)
        }
        let drafts =
            SourceChanges.changes(record, source: source, account: account, announced: announced)
            + CreditChanges.granted(operations, account: account, subscription: nil, environment: environment, cause: cause)
        let statuses = try await credits.apply(operations, readingStatusOf: drafts.isEmpty ? [] : [account], at: now, on: connection)
        if let recorder, !drafts.isEmpty { try await recorder.record(drafts, now: now, statuses: statuses, on: connection) }
        let nextWindow = SourceCredits.window(of: record, catalogue: catalogue, at: now).map(\.end)
        if let next = [source.nextChangeAt, nextWindow].compactMap({ $0 }).filter({ $0 > now }).min() {
            let job = try NewJob(
                kind: SourceChangeJob.jobKind, arguments: SourceChangeJob.Arguments(sourceId: record.id), runAt: next,
                uniqueKey: "source-change:\(record.id):\(Int64(next.timeIntervalSince1970))", concurrencyKey: "account:\(account.text)")
            try await queue.enqueue(job, on: connection)
        }
        return operations
    }
}
