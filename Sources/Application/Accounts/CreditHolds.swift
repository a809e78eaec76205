import Credits
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StatementFencing
import Subscriptions

/// Holds of credits for work whose cost is known only at its end (a model call): `hold` takes the credits from the
/// account's buckets in spend order, as a spend would, and keeps them from every other spend and hold; `settle`
/// charges what the work cost and gives the rest back; `release` gives it all back; a hold not ended by its expiry is
/// released by ``HoldExpiryJob``. Where credits go back is ``HoldSettlement``'s rule. Concurrent holds and ends share
/// a transaction (a ``CommitGroup``, as spends do, ``HoldGroup``), under their accounts' locks, the ones spends and
/// applies take.
public struct CreditHolds: Sendable {
    /// A request for a hold.
    public struct Request: Sendable {
        public var account: AccountID
        public var meter: String
        public var amount: Int64
        public var idempotencyKey: String
        public var expiresIn: Int

        public init(account: AccountID, meter: String, amount: Int64, idempotencyKey: String, expiresIn: Int) {
            (self.account, self.meter, self.amount, self.idempotencyKey, self.expiresIn) = (account, meter, amount, idempotencyKey, expiresIn)
        }
    }

    /// What asking for a hold came to.
    public enum HoldAnswer: Sendable {
        /// Held (or held already under the key): `remaining` is what is left of the meter after it, `nil` unlimited.
        case held(CreditHold, remaining: Int64?)
        /// Less than the amount is left: nothing is held.
        case insufficient(available: Int64)
        /// The key was used for another hold.
        case keyReused(CreditHold)
    }

    /// What ending a hold came to.
    public enum EndAnswer: Sendable {
        case ended(CreditHold)
        /// Ended already another way (or settled for another amount): the hold as it ended.
        case alreadyEnded(CreditHold)
        /// The amount is more than was held.
        case overHeld(CreditHold)
        case notFound
    }

    /// `expiresIn` when not given, and its bounds (seconds).
    public static let defaultExpiry = 900
    public static let expiryRange = 1...86_400
    /// The most one hold may hold (as ``CreditAdjustment``'s bound, a thousand times over): sums of holds stay far from
    /// overflowing, and no meter's real work costs more.
    public static let largestAmount: Int64 = 1_000_000_000

    /// How many due holds one expiry transaction ends: few enough that the accounts it locks for its moment are a
    /// small share of those the app is spending for (16, 32 and 64 measured: docs/capacity.md, "Kept balances").
    public static let expiryBatch = 16

    let client: PostgresClient
    let ledger: CreditLedger
    let usageRequests: UsageRequests
    let cache: AccountStatusCache?
    let logger: Logger
    private let store: CreditHoldStore
    private let group: CommitGroup<HoldWork, HoldResult>
    private let commit: @Sendable ([HoldWork]) async throws -> [HoldResult]

    /// - Parameter executor: where the groups' transactions run (see ``CommitGroup``).
    public init(
        client: PostgresClient, ledger: CreditLedger, queue: any JobScheduling, events: EventRecorder?, cache: AccountStatusCache?,
        executor: (any TaskExecutor)? = nil, logger: Logger
    ) {
        let store = CreditHoldStore(logger: logger)
        let statements = HoldGroup(ledger: ledger, store: store, events: events)
        let expiries = HoldExpirySchedule(queue: queue)
        let commit: @Sendable ([HoldWork]) async throws -> [HoldResult] = { works in
            // Fenced, as spends' groups are: a connection closed under any statement must not stop the group's loop.
            let (done, scheduled) = try await client.withFencedTransaction(logger: logger, onConnectionLoop: true) { connection in
                let done = try await statements.run(works, on: connection)
                return (done, try await expiries.schedule(done.expiries, on: connection))
            }
            expiries.committed(scheduled)
            return done.results
        }
        self.client = client
        self.ledger = ledger
        self.usageRequests = UsageRequests(logger: logger)
        self.logger = logger
        self.store = store
        self.commit = commit
        self.group = CommitGroup(maximumBatch: 64, name: "holds", executor: executor, commit: commit)
        self.cache = cache
    }

    /// Holds `amount` of a meter for the account, or answers the hold its key already took.
    public func hold(_ request: Request, now: Date) async throws -> HoldAnswer {
        defer { cache?.invalidate(request.account) }
        guard case .hold(let answer) = try await group.submit(HoldWork(operation: .hold(request), now: now)) else {
            preconditionFailure("a hold's work answers a hold")
        }
        return answer
    }

    /// A hold, by its id or by the account and the idempotency key that took it (the service knows its key already).
    public enum Target: Sendable {
        case id(UUID)
        case key(AccountID, String)
    }

    /// Charges `amount` of the hold and gives the rest back. Settling again for the same amount answers the first
    /// settle; any other end of an ended hold is ``EndAnswer/alreadyEnded(_:)``.
    public func settle(_ target: Target, amount: Int64, now: Date) async throws -> EndAnswer {
        try await end(target, charging: amount, as: .settled, now: now)
    }

    /// Gives the whole hold back; releasing again answers the first release.
    public func release(_ target: Target, now: Date) async throws -> EndAnswer {
        try await end(target, charging: 0, as: .released, now: now)
    }

    /// Releases up to ``expiryBatch`` holds still held whose expiry has come by `now`, in one transaction
    /// (``HoldExpiryJob``), leaving out those in `failed`; returns how many it read. Holds the database refused are
    /// added to `failed`, so a sweep goes on past them to the holds behind.
    public func expireDue(now: Date, failed: inout Set<UUID>) async throws -> Int {
        let skipping = Array(failed)
        let due = try await client.withFencedConnection {
            try await store.dueHolds(at: now, limit: Self.expiryBatch, skipping: skipping, on: $0)
        }
        guard !due.isEmpty else { return 0 }
        let works = due.map { HoldWork(operation: .end(.id($0), charging: 0, as: .expired), now: now) }
        var results: [HoldResult]
        do {
            results = try await commit(works)
        } catch {
            // One hold the database refuses must not stop every sweep (it is first in each): each alone, and the one
            // that fails is logged and left for the next sweep.
            results = []
            for work in works {
                do {
                    results += try await commit([work])
                } catch {
                    if case .end(.id(let id), _, _) = work.operation { failed.insert(id) }
                    logger.error("a hold could not be released at its expiry", metadata: ["hold.expiry.error": "\(String(reflecting: error))"])
                }
            }
        }
        for case .end(.ended(let hold)) in results { cache?.invalidate(hold.account) }
        return due.count
    }

    private func end(_ target: Target, charging amount: Int64, as state: CreditHold.State, now: Date) async throws -> EndAnswer {
        guard case .end(let answer) = try await group.submit(HoldWork(operation: .end(target, charging: amount, as: state), now: now)) else {
            preconditionFailure("an end's work answers an end")
        }
        switch answer {
        case .ended(let hold), .alreadyEnded(let hold), .overHeld(let hold): cache?.invalidate(hold.account)
        case .notFound: break
        }
        return answer
    }

    /// What is left of `meter` among `live` balances.
    static func available(_ meter: String, in live: [AccountCredits.LiveBalance]) -> Int64 {
        live.filter { $0.bucket.meter == meter }.reduce(0) { $0 + max($1.balance, 0) }
    }

    /// The hold `id` as it stands.
    public func hold(_ id: UUID) async throws -> CreditHold? {
        try await client.withFencedConnection { try await store.hold(id, on: $0) }
    }
}
