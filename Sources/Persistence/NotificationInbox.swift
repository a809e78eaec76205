import AppStoreModels
import Foundation
import Jobs
import Logging
import PostgresNIO

/// The durable intake: stores a verified notification and enqueues the job that applies it, in one transaction.
/// A notification already stored (Apple retries with the same `notificationUUID`) is reported as a duplicate and
/// enqueues nothing.
///
/// Concurrent requests share transactions (a ``CommitGroup``): under load one commit stores dozens of notifications,
/// and still none is answered before the commit that stored it.
public struct NotificationInbox: Sendable {
    /// Job kind of the job that applies a stored notification.
    public static let applyJobKind = "apply-notification"

    /// Arguments of the apply job.
    public struct ApplyArguments: Codable, Sendable {
        public var notificationUUID: UUID
        public init(notificationUUID: UUID) { self.notificationUUID = notificationUUID }
    }

    public enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
    }

    /// One notification as its `notifications` row and apply job.
    struct Entry: Sendable {
        var uuid: UUID
        var notificationType: String
        var subtype: String?
        var environment: String?
        var originalTransactionId: String?
        var signedDate: Int64
        var signedPayload: String
        var decoded: String
        var job: NewJob
    }

    private let group: CommitGroup<Entry, Outcome>

    /// - Parameter notifier: wakes workers after each commit (shared by all requests of a process).
    public init(client: PostgresClient, queue: PostgresJobQueue, notifier: WorkerNotifier, logger: Logger) {
        self.group = CommitGroup(maximumBatch: 64) { entries in
            let outcomes = try await Self.store(entries, client: client, queue: queue, logger: logger)
            if outcomes.contains(.accepted) { notifier.signal() }
            return outcomes
        }
    }

    /// Stores `notification` (with the raw `signedPayload` it was verified from) and enqueues its apply job; returns
    /// once that is committed.
    public func accept(
        _ notification: VerifiedNotification, uuid: UUID, signedPayload: String
    ) async throws -> Outcome {
        // The decoded copy leaves out the nested JWS strings: they are in `signed_payload` already, verbatim.
        var stored = notification
        stored.payload.data?.signedTransactionInfo = nil
        stored.payload.data?.signedRenewalInfo = nil
        stored.payload.appData?.signedAppTransactionInfo = nil
        let payload = notification.payload
        let subscription = notification.originalTransactionId
        let entry = Entry(
            uuid: uuid, notificationType: payload.notificationType, subtype: payload.subtype,
            environment: payload.claimedIdentity?.environment?.rawValue, originalTransactionId: subscription,
            signedDate: payload.signedDate ?? 0, signedPayload: signedPayload,
            decoded: String(decoding: try JSONEncoder().encode(stored), as: UTF8.self),
            job: try NewJob(
                kind: Self.applyJobKind, arguments: ApplyArguments(notificationUUID: uuid), maxAttempts: 25,
                uniqueKey: "apply:\(uuid)", concurrencyKey: subscription.map { "subscription:\($0)" }
            )
        )
        return try await group.submit(entry)
    }

    /// Inserts the entries' notifications in one statement and enqueues the apply jobs of those not stored before, in
    /// one transaction. An entry repeating an earlier one of the same group is a duplicate.
    static func store(
        _ entries: [Entry], client: PostgresClient, queue: PostgresJobQueue, logger: Logger
    ) async throws -> [Outcome] {
        var seen = Set<UUID>()
        let distinct = entries.filter { seen.insert($0.uuid).inserted }
        // Arrays cannot carry NULLs through the binding, so absent texts travel as '' and become NULL.
        let uuids = distinct.map(\.uuid)
        let types = distinct.map(\.notificationType)
        let subtypes = distinct.map { $0.subtype ?? "" }
        let environments = distinct.map { $0.environment ?? "" }
        let subscriptions = distinct.map { $0.originalTransactionId ?? "" }
        let signedDates = distinct.map(\.signedDate)
        let signedPayloads = distinct.map(\.signedPayload)
        let decoded = distinct.map(\.decoded)
        let inserted = try await client.withTransaction(logger: logger) { connection -> Set<UUID> in
            let rows = try await connection.query(
                """
                INSERT INTO notifications (notification_uuid, notification_type, subtype, environment,
                    original_transaction_id, signed_date, signed_payload, decoded)
                SELECT uuid, type, NULLIF(subtype, ''), NULLIF(environment, ''), NULLIF(subscription, ''), signed_date,
                    signed_payload, decoded::jsonb
                FROM unnest(\(uuids)::uuid[], \(types)::text[], \(subtypes)::text[], \(environments)::text[],
                            \(subscriptions)::text[], \(signedDates)::int8[], \(signedPayloads)::text[], \(decoded)::text[])
                     AS input(uuid, type, subtype, environment, subscription, signed_date, signed_payload, decoded)
                ON CONFLICT (notification_uuid) DO NOTHING
                RETURNING notification_uuid
                """,
                logger: logger
            )
            var inserted = Set<UUID>()
            for try await uuid in rows.decode(UUID.self) { inserted.insert(uuid) }
            try await queue.enqueue(distinct.filter { inserted.contains($0.uuid) }.map(\.job), on: connection, notify: false)
            return inserted
        }
        var answered = Set<UUID>()
        return entries.map { entry in
            inserted.contains(entry.uuid) && answered.insert(entry.uuid).inserted ? .accepted : .duplicate
        }
    }
}
