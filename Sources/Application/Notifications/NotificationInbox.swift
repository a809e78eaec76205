import AppStoreModels
import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import SignedData
import Synchronization

/// The durable intake: stores a verified notification and enqueues the job that applies it, in one statement.
/// A notification already stored (Apple retries with the same `notificationUUID`) is reported as a duplicate and
/// enqueues nothing.
///
/// Concurrent requests share statements (a ``CommitGroup``): under load one statement stores dozens of notifications,
/// and still none is answered before the statement that stored it has committed.
public struct NotificationInbox: Sendable {
    /// Job kind of the job that applies a stored notification.
    public static let applyJobKind = "apply-notification"

    /// Arguments of the apply job.
    public struct ApplyArguments: Codable, Sendable {
        public var notificationUUID: UUID
        /// The `appAccountToken`s of the notification's transaction and renewal info: the apply looks them up with its
        /// first read. Absent in jobs enqueued without them (catch-up, backfill, before they were added).
        public var accountTokens: [UUID]?

        public init(notificationUUID: UUID, accountTokens: [UUID]? = nil) {
            self.notificationUUID = notificationUUID
            self.accountTokens = accountTokens
        }

        /// The arguments of `notification`'s apply job.
        public init(_ notification: VerifiedNotification, uuid: UUID) {
            var tokens: [UUID] = []
            for text in [notification.transaction?.appAccountToken, notification.renewalInfo?.appAccountToken] {
                if let text, let token = UUID(text: text), !tokens.contains(token) { tokens.append(token) }
            }
            self.init(notificationUUID: uuid, accountTokens: tokens.isEmpty ? nil : tokens)
        }

        /// The JSON `JSONEncoder` writes of the arguments (ids in uppercase, as `uuidString`: erasure finds a job by its
        /// tokens so written; the members in their declaration order, where the encoder's order varies and `jobs.args`
        /// is `jsonb`), written with ``JSONWriter``: the encoder cost about 1.4 % of `serve`'s CPU at the intake (a test
        /// holds the two to each other).
        public var json: String {
            var writer = JSONWriter(capacity: 140)
            writer.beginObject()
            writer.member("notificationUUID", notificationUUID.uppercasedText)
            if let accountTokens {
                writer.key("accountTokens")
                writer.beginArray()
                for token in accountTokens {
                    writer.element()
                    writer.string(token.uppercasedText)
                }
                writer.endArray()
            }
            writer.endObject()
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }

    /// The job that applies `notification`, stored as `uuid`: unique by the id in uppercase, as catch-up enqueues it too
    /// (sql/0044), so that a notification is applied by one job; one at a time for its subscription.
    public static func applyJob(for notification: VerifiedNotification, uuid: UUID, subscription: String?) -> NewJob {
        NewJob(
            kind: applyJobKind, argumentsJSON: ApplyArguments(notification, uuid: uuid).json, maxAttempts: 25,
            uniqueKey: "apply:\(uuid.uppercasedText)", concurrencyKey: subscription.map { "subscription:\($0)" })
    }

    public enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
    }

    private let group: CommitGroup<NotificationStore.NewNotification, Outcome>

    /// - Parameters:
    ///   - notifier: wakes workers after each commit (shared by all requests of a process).
    ///   - executor: where the groups' transactions run (see ``CommitGroup``).
    public init(client: PostgresClient, notifier: WorkerNotifier, executor: (any TaskExecutor)? = nil, logger: Logger) {
        let storedHeaders = StoredHeaders()
        self.group = CommitGroup(maximumBatch: 64, name: "notifications", executor: executor) { entries in
            let outcomes = try await Self.store(entries, storedHeaders: storedHeaders, client: client, logger: logger)
            if outcomes.contains(.accepted) { notifier.signal() }
            return outcomes
        }
    }

    /// Stores `notification` (with the raw `signedPayload` it was verified from) and enqueues its apply job; returns
    /// once that is committed.
    ///
    /// Content outside ``ContentLimits`` is stored too, with its reason, so that the job records it as
    /// `rejected_content`: its texts go into columns with NUL characters replaced and only within the limits (PostgreSQL
    /// refuses NUL in text and jsonb, and long keys in an index); the signed payload is kept exactly (as its parts).
    public func accept(
        _ notification: VerifiedNotification, uuid: UUID, signedPayload: String
    ) async throws -> Outcome {
        let payload = notification.payload
        let rejectedReason = notification.contentProblem.map(Self.storable)
        let signed = Self.signed(signedPayload, of: notification)
        // Parts are the facts; a payload kept verbatim, or rejected (found by its decoded copy), needs the copy.
        var decoded: String?
        if case .verbatim = signed { decoded = try StoredNotificationFacts.decodedText(of: notification) }
        var subscription = notification.originalTransactionId
        if rejectedReason != nil {
            decoded = try (decoded ?? StoredNotificationFacts.decodedText(of: notification))
                .replacingOccurrences(of: "\\u0000", with: "\\ufffd")
            subscription = subscription.flatMap { Self.storable($0) == $0 ? $0 : nil }
        }
        let entry = NotificationStore.NewNotification(
            uuid: uuid, notificationType: Self.storable(payload.notificationType), subtype: payload.subtype.map(Self.storable),
            environment: payload.claimedIdentity?.environment.map { Self.storable($0.rawValue) }, originalTransactionId: subscription,
            signedDate: payload.signedDate ?? 0, signed: signed, decoded: decoded, rejectedReason: rejectedReason,
            job: Self.applyJob(for: notification, uuid: uuid, subscription: subscription))
        return try await group.submit(entry)
    }

    /// `signedPayload` as its parts (its nested JWS too), or verbatim when they would not join back exactly.
    static func signed(_ signedPayload: String, of notification: VerifiedNotification) -> NotificationStore.SignedForm {
        let payload = notification.payload
        let nested = [
            payload.data?.signedTransactionInfo.map { (StoredNotificationFacts.transactionField, $0) },
            payload.data?.signedRenewalInfo.map { (StoredNotificationFacts.renewalInfoField, $0) },
            payload.appData?.signedAppTransactionInfo.map { (StoredNotificationFacts.appTransactionField, $0) },
        ]
        guard let parts = SignedParts(splitting: signedPayload, nested: nested.compactMap { $0 }), let stored = try? parts.storedValue() else {
            return .verbatim(signedPayload)
        }
        return .parts(stored: stored, headers: parts.headers)
    }

    /// Digests of the headers this process has stored (committed): a batch sends only headers not among them.
    final class StoredHeaders: Sendable {
        private let digests = Mutex(Set<Data>())

        /// The headers of `entries` not known to be stored, each once.
        func unknown(in entries: [NotificationStore.NewNotification]) -> [Data: String] {
            var headers: [Data: String] = [:]
            for case .parts(_, let named) in entries.map(\.signed) { headers.merge(named) { first, _ in first } }
            return digests.withLock { known in headers.filter { !known.contains($0.key) } }
        }

        func insert(_ stored: some Sequence<Data>) { digests.withLock { $0.formUnion(stored) } }
    }

    /// `text` as PostgreSQL can store and index it: NUL replaced, at most 256 bytes (of whole characters).
    static func storable(_ text: String) -> String {
        var cleaned = text.contains("\u{0}") ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
        while cleaned.utf8.count > ContentLimits.identifierBytes { cleaned.removeLast() }
        return cleaned
    }

    /// Inserts the entries' notifications and the apply jobs of those not stored before, in one statement (one round
    /// trip, atomic). An entry repeating an earlier one of the same group is a duplicate.
    static func store(_ entries: [NotificationStore.NewNotification], storedHeaders: StoredHeaders, client: PostgresClient, logger: Logger)
        async throws -> [Outcome]
    {
        var seen = Set<UUID>()
        let distinct = entries.filter { seen.insert($0.uuid).inserted }
        let headers = storedHeaders.unknown(in: distinct)
        let inserted = try await client.withConnection { connection in
            try await NotificationStore(logger: logger).insertNew(distinct, headers: headers, on: connection)
        }
        storedHeaders.insert(headers.keys)
        var answered = Set<UUID>()
        return entries.map { entry in
            inserted.contains(entry.uuid) && answered.insert(entry.uuid).inserted ? .accepted : .duplicate
        }
    }
}
