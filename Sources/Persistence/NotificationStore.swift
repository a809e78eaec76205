import AppStoreModels
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO
import StatementFencing
import Subscriptions

/// Reads stored notifications and records how they were applied.
public struct NotificationStore: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// A stored notification as a worker reads it.
    public enum Stored: Sendable {
        /// Its verified content, within ``ContentLimits``.
        case verified(VerifiedNotification)
        /// Authentic, but its content is outside ``ContentLimits`` for this reason: it is recorded, not applied.
        case rejectedContent(reason: String)
    }

    /// A stored notification as an apply reads it, with the lock of its subscription taken: `lockedSubscription` is the
    /// `originalTransactionId` locked, `nil` when the notification names none; `history` is that subscription and its
    /// stored events as read under the lock (what an apply decides on), `nil` with no lock, for content refused, and
    /// for a notification that is no ``SubscriptionEvent`` (a consumable's).
    public typealias LockedRead = (notification: Stored, lockedSubscription: String?, history: SubscriptionHistory.Read?)

    /// One notification an apply reads: its id and the `appAccountToken`s the intake found in it.
    public struct Wanted: Sendable {
        public var uuid: UUID
        public var tokens: [UUID]

        public init(uuid: UUID, tokens: [UUID] = []) {
            self.uuid = uuid
            self.tokens = tokens
        }
    }

    /// The notification stored under `uuid`, read in the statement that also locks its subscription (see
    /// ``SubscriptionStore/lockedSubscription(_:on:lockHeld:)``) for the rest of the caller's transaction, with that
    /// subscription's history (``LockedRead``); `nil` when no notification is stored under `uuid`. Content outside
    /// ``ContentLimits`` — found at the intake, or now in a row stored before the intake looked — is
    /// `rejectedContent`.
    ///
    /// `tokens` (the `appAccountToken`s the intake found in the notification) are looked up in the same round trip and
    /// their answers remembered by `intents`, so that the apply's own lookup (``PurchaseIntents/accounts(ofTokens:on:)``)
    /// finds them there.
    public func notificationLockingSubscription(
        _ uuid: UUID, lookingUp tokens: [UUID] = [], in intents: PurchaseIntents? = nil, on connection: PostgresConnection
    ) async throws -> LockedRead? {
        try await notificationsLockingSubscriptions([Wanted(uuid: uuid, tokens: tokens)], in: intents, on: connection)[0]
    }

    /// ``notificationLockingSubscription(_:lookingUp:in:on:)`` for the notifications of a shared transaction, in one
    /// round trip (`notification_and_history`, sql/0019, once for each, in the order given: the locks are taken in that
    /// order); the answers in the same order.
    public func notificationsLockingSubscriptions(_ wanted: [Wanted], in intents: PurchaseIntents? = nil, on connection: PostgresConnection)
        async throws -> [LockedRead?]
    {
        guard !wanted.isEmpty else { return [] }
        let tokens = wanted.flatMap(\.tokens)
        let owners = wanted.enumerated().flatMap { index, wanted in wanted.tokens.map { _ in Int64(index + 1) } }
        let rows = try await connection.run(PreparedQuery<NotificationsAndHistories>(wanted.map(\.uuid), tokens, owners), logger: logger)
        // Each notification's rows in the function's order (its own row first); put in order here rather than by an
        // ORDER BY, which would sort every history row of the group — on disk for long histories.
        var groups: [[(row: PostgresRow, ordinality: Int64)]] = Array(repeating: [], count: wanted.count)
        for row in rows {
            let cells = row.makeRandomAccess()
            let (position, ordinality) = (try cells["wanted_position"].decode(Int64.self), try cells["ordinality"].decode(Int64.self))
            groups[Int(position) - 1].append((row, ordinality))
        }
        return try zip(wanted, groups).map { wanted, rows in
            try lockedRead(wanted, rows: rows.sorted { $0.ordinality < $1.ordinality }.map(\.row), in: intents)
        }
    }

    /// One notification's rows of ``NotificationsAndHistories``.
    private func lockedRead(_ wanted: Wanted, rows: [PostgresRow], in intents: PurchaseIntents?) throws -> LockedRead? {
        guard let first = rows.first else { return nil }
        let (decoded, parts, subscription, rejectedReason, locked) = try first.decode((String?, ByteBuffer?, String?, String?, Bool).self)
        if let intents, !wanted.tokens.isEmpty {
            let cells = first.makeRandomAccess()
            var found: [UUID: AccountID] = [:]
            for (token, account) in zip(
                try cells["intent_tokens"].decode([UUID]?.self) ?? [], try cells["intent_accounts"].decode([String]?.self) ?? [])
            {
                found[token] = AccountID(account)
            }
            intents.remember(wanted.tokens, found: found)
        }
        let lockedSubscription = locked ? subscription : nil
        if let reason = rejectedReason { return (.rejectedContent(reason: reason), lockedSubscription, nil) }
        guard let notification = try? StoredNotificationFacts.notification(decoded: decoded, parts: parts) else {
            throw PersistenceError(.corruptRecord, "stored notification \(wanted.uuid) does not decode")
        }
        if let reason = notification.contentProblem { return (.rejectedContent(reason: reason), lockedSubscription, nil) }
        // A consumable's notification names a transaction, not a subscription: nothing to derive, nothing to decode.
        let history = try lockedSubscription.flatMap { id in
            SubscriptionEvent(notification) == nil ? nil : try SubscriptionHistory.read(rows.dropFirst(), of: id)
        }
        return (.verified(notification), lockedSubscription, history)
    }

    /// What applying a notification came to (`notifications.apply_outcome`).
    public enum ApplyOutcome: String, Sendable, CaseIterable {
        /// A subscription's state or ledger changed, or a one-time purchase was stored for its account.
        case applied
        /// The facts already said everything the notification says.
        case unchanged
        /// Stored, nothing to change (TEST, summaries, a purchase no account is known for yet, types Apple adds).
        case recorded
        /// A consumable's top-up credits were granted or taken back.
        case toppedUp = "topped_up"
        /// Authentic content outside the limits: recorded with its reason, nothing changed.
        case rejectedContent = "rejected_content"
    }

    public struct Processed: Sendable {
        public var uuid: UUID
        public var outcome: ApplyOutcome
        public var reason: String?
        public var jobID: Int64
        public var attempt: Int

        /// Bound as five arrays in this order where a statement records them (``NotificationStore/recordingProcessed(boundFrom:)``);
        /// no reason is bound as ''.
        static func arrays(of processed: [Processed]) -> [(any PostgresEncodable)?] {
            [
                processed.map(\.outcome.rawValue), processed.map { $0.reason ?? "" }, processed.map(\.uuid), processed.map(\.jobID),
                processed.map { Int64($0.attempt) },
            ]
        }

        public init(_ uuid: UUID, outcome: ApplyOutcome, reason: String? = nil, jobID: Int64, attempt: Int) {
            self.uuid = uuid
            self.outcome = outcome
            self.reason = reason
            self.jobID = jobID
            self.attempt = attempt
        }
    }

    /// Records how the apply jobs of one transaction processed their notifications and completes their jobs in one
    /// statement; answers each of `processed`, in order, whether its job was still running under that attempt. The
    /// first processing's time and outcome stay: its job run again (requeued by an operator) finds nothing left to
    /// change and must not record `unchanged` over them. Applies that store events record their processing with them
    /// instead (``EventLog/append(_:markingProcessed:on:)``), in the same statement.
    public func markProcessed(_ processed: [Processed], on connection: PostgresConnection) async throws -> [Bool] {
        try await EventLog(logger: logger).append([], markingProcessed: processed, on: connection).jobsCompleted
    }

    /// Notifications `$1`, each with its subscription's lock taken, then that subscription's history: a notification's
    /// five columns in its first row, ``SubscriptionHistory/SubscriptionAndEvents``' columns in the others; on every
    /// row, those of its tokens (`$2`, each with the position of its notification in `$1`, from 1, in `$3`) that have a
    /// purchase intent and their accounts (NULL for none), the position of its notification (`wanted_position`) and
    /// of the row among its notification's (`ordinality`).
    /// Each call of the function is VOLATILE: its read sees what the previous holder of a lock it waited for committed.
    enum NotificationsAndHistories: PreparedSQL {
        static let sql = """
            SELECT n.notification_decoded, n.notification_parts, n.notification_subscription, n.notification_rejected,
                coalesce(n.notification_locked, false), \(SubscriptionHistory.SubscriptionAndEvents.columns),
                intents.intent_tokens, intents.intent_accounts, wanted.wanted_position, n.ordinality
            FROM unnest($1::uuid[]) WITH ORDINALITY AS wanted (uuid, wanted_position)
            CROSS JOIN LATERAL (
                SELECT array_agg(p.token) AS intent_tokens, array_agg(p.account_id) AS intent_accounts FROM purchase_intents p
                WHERE p.token = ANY(ARRAY(
                    SELECT t.token FROM unnest($2::uuid[], $3::int8[]) AS t (token, owner) WHERE t.owner = wanted.wanted_position))
            ) AS intents
            CROSS JOIN LATERAL notification_and_history(wanted.uuid) WITH ORDINALITY AS n
            """
    }

    /// The write that records the processings and the calls that complete their jobs, with ``Processed/arrays(of:)``
    /// bound from `$first` on: the statement of ``EventLog/append(_:markingProcessed:on:)`` (and so of
    /// ``markProcessed(_:on:)``). The completions are called in the jobs' order and answered in an array.
    static func recordingProcessed(boundFrom first: Int) -> (update: String, completions: String) {
        let value = (first..<first + 5).map { "$\($0)" }
        return (
            """
            UPDATE notifications SET applied_at = coalesce(applied_at, now()),
                apply_outcome = CASE WHEN applied_at IS NULL THEN processed.outcome ELSE apply_outcome END,
                rejected_reason = coalesce(NULLIF(processed.reason, ''), rejected_reason)
            FROM unnest(\(value[0])::text[], \(value[1])::text[], \(value[2])::uuid[]) AS processed (outcome, reason, uuid)
            WHERE notification_uuid = processed.uuid
            """,
            """
            (SELECT array_agg(complete_job(job.id, job.attempt) ORDER BY job.position)
             FROM unnest(\(value[3])::int8[], \(value[4])::int8[]) WITH ORDINALITY AS job (id, attempt, position))
            """
        )
    }

    /// Whether no stored notification about `originalTransactionId` was signed after `signedDate`: the newest fact, whose
    /// word on a one-time purchase stands whatever order notifications are applied in.
    public func isNewest(signedDate: Int64, ofTransaction originalTransactionId: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            SELECT NOT EXISTS (SELECT 1 FROM notifications WHERE original_transaction_id = \(originalTransactionId)
                               AND signed_date > \(signedDate) AND rejected_reason IS NULL)
            """, logger: logger)
        for try await newest in rows.decode(Bool.self) { return newest }
        return true
    }

}
