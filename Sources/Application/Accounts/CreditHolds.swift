import Credits
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Holds of credits for work whose cost is known only at its end (a model call): `hold` takes the credits from the
/// account's buckets in spend order, as a spend would, and keeps them from every other spend and hold; `settle`
/// charges what the work cost and gives the rest back; `release` gives it all back; a hold not ended by its expiry is
/// released by ``HoldExpiryJob``. Where credits go back is ``HoldSettlement``'s rule. Each runs in one transaction
/// under the account's lock, the one spends and applies take.
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
        case held(CreditHoldStore.Hold, remaining: Int64?)
        /// Less than the amount is left: nothing is held.
        case insufficient(available: Int64)
        /// The key was used for another hold.
        case keyReused(CreditHoldStore.Hold)
    }

    /// What ending a hold came to.
    public enum EndAnswer: Sendable {
        case ended(CreditHoldStore.Hold)
        /// Ended already another way (or settled for another amount): the hold as it ended.
        case alreadyEnded(CreditHoldStore.Hold)
        /// The amount is more than was held.
        case overHeld(CreditHoldStore.Hold)
        case notFound
    }

    /// `expiresIn` when not given, and its bounds (seconds).
    public static let defaultExpiry = 900
    public static let expiryRange = 1...86_400
    /// The most one hold may hold (as ``CreditAdjustment``'s bound, a thousand times over): sums of holds stay far from
    /// overflowing, and no meter's real work costs more.
    public static let largestAmount: Int64 = 1_000_000_000

    private let client: PostgresClient
    private let ledger: CreditLedger
    private let store: CreditHoldStore
    private let queue: any JobScheduling
    private let events: EventRecorder?
    private let cache: AccountStatusCache?
    private let logger: Logger

    public init(
        client: PostgresClient, ledger: CreditLedger, queue: any JobScheduling, events: EventRecorder?, cache: AccountStatusCache?, logger: Logger
    ) {
        self.client = client
        self.ledger = ledger
        self.store = CreditHoldStore(logger: logger)
        self.queue = queue
        self.events = events
        self.cache = cache
        self.logger = logger
    }

    /// Holds `amount` of a meter for the account, or answers the hold its key already took.
    public func hold(_ request: Request, now: Date) async throws -> HoldAnswer {
        defer { cache?.invalidate(request.account) }
        return try await client.withTransaction(logger: logger) { connection in
            try await ledger.lockAccount(request.account, on: connection)
            let spendable = try await ledger.spendableCredits(of: [request.account], now: now, on: connection)[request.account]
            let unlimited = spendable?.credits.meters[request.meter]?.unlimited == true
            let live = spendable?.live ?? []
            var drafts = spendable?.openedWindows(account: request.account) ?? []
            // Whatever the answer, windows this read wrote first are announced (as a spend announces them).
            if let existing = try await store.hold(of: request.account, idempotencyKey: request.idempotencyKey, on: connection) {
                try await events?.record(drafts, now: now, on: connection)
                guard existing.meter == request.meter, existing.amount == request.amount else { return .keyReused(existing) }
                return .held(existing, remaining: unlimited ? nil : Self.available(request.meter, in: live))
            }
            let debits: [HoldSettlement.Debit]
            let remaining: Int64?
            switch Spending.spend(request.amount, of: request.meter, unlimited: unlimited, from: live) {
            case .unlimited:
                (debits, remaining) = ([], nil)
            case .spent(let plan, let left, _):
                (debits, remaining) = (plan.debits.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }, left)
            case .insufficient(let available):
                try await events?.record(drafts, now: now, on: connection)
                return .insufficient(available: available)
            }
            let hold = CreditHoldStore.Hold(
                id: UUID(), account: request.account, idempotencyKey: request.idempotencyKey, meter: request.meter, amount: request.amount,
                debits: debits, createdAt: now, expiresAt: now.addingTimeInterval(Double(request.expiresIn)))
            try await store.insert(hold, on: connection)
            // The hold takes the last credit as a spend would: the app hears it as a spend's `credits.depleted`.
            drafts += CreditChanges.depleted(
                meter: request.meter, remaining: remaining, account: request.account, spendKey: CreditHoldStore.debitKey(hold.id, 0),
                environment: spendable?.environment ?? "Production")
            try await events?.record(drafts, now: now, on: connection)
            try await queue.enqueue(
                try NewJob(
                    kind: HoldExpiryJob.jobKind, arguments: HoldExpiryJob.Arguments(holdId: hold.id), runAt: hold.expiresAt,
                    uniqueKey: "hold-expiry:\(hold.id.uuidString.lowercased())", concurrencyKey: "account:\(request.account.text)"),
                on: connection)
            return .held(hold, remaining: remaining)
        }
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

    /// Releases the hold if its expiry has come and it is still held (``HoldExpiryJob``).
    public func expire(_ id: UUID, now: Date) async throws {
        _ = try await end(.id(id), charging: 0, as: .expired, now: now)
    }

    private func end(_ target: Target, charging amount: Int64, as state: CreditHoldStore.Hold.State, now: Date) async throws -> EndAnswer {
        let answer = try await client.withTransaction(logger: logger) { connection -> EndAnswer in
            let found: CreditHoldStore.Hold?
            switch target {
            case .id(let id): found = try await store.hold(id, on: connection)
            case .key(let account, let key): found = try await store.hold(of: account, idempotencyKey: key, on: connection)
            }
            guard let found else { return .notFound }
            try await ledger.lockAccount(found.account, on: connection)
            // Read again under the lock: another end may have committed meanwhile.
            guard var hold = try await store.hold(found.id, on: connection) else { return .notFound }
            if hold.state != .held {
                let repeated = hold.state == state && (state != .settled || hold.charged == amount)
                return repeated ? .ended(hold) : .alreadyEnded(hold)
            }
            // Past its expiry a hold is the expiry job's, whoever asks first.
            let ending: CreditHoldStore.Hold.State = now >= hold.expiresAt ? .expired : state
            let charge = ending == .expired ? 0 : amount
            guard charge <= hold.amount else { return .overHeld(hold) }
            let buckets = hold.debits.map(\.bucket)
            var destinations: [String: String] = [:]
            if !buckets.isEmpty {
                let open = Set((try await ledger.liveBuckets(of: [hold.account], at: now, on: connection)[hold.account] ?? []).map(\.bucket.key))
                destinations = try await store.destinations(of: buckets, holdId: hold.id, open: open, on: connection)
            }
            // An unlimited meter's hold took nothing from any bucket: it is charged without a ledger row.
            let outcome = hold.debits.isEmpty
                ? HoldSettlement.Outcome(charged: [], returns: [], lapsed: 0)
                : HoldSettlement.settle(hold.debits, charge: charge, destination: { destinations[$0] })
            guard let outcome else { return .overHeld(hold) }
            try await store.end(hold, as: ending, charging: charge, outcome: outcome, at: now, on: connection)
            (hold.state, hold.charged, hold.returned, hold.lapsed, hold.endedAt) = (ending, charge, outcome.returned, outcome.lapsed, now)
            return ending == state ? .ended(hold) : .alreadyEnded(hold)
        }
        if case .ended(let hold) = answer { cache?.invalidate(hold.account) }
        if case .alreadyEnded(let hold) = answer { cache?.invalidate(hold.account) }
        return answer
    }

    /// What is left of `meter` among `live` balances.
    static func available(_ meter: String, in live: [AccountCredits.LiveBalance]) -> Int64 {
        live.filter { $0.bucket.meter == meter }.reduce(0) { $0 + max($1.balance, 0) }
    }

    /// The hold `id` as it stands.
    public func hold(_ id: UUID) async throws -> CreditHoldStore.Hold? {
        try await client.withConnection { try await store.hold(id, on: $0) }
    }
}
