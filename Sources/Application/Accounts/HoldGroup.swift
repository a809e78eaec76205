import Credits
import Entitlements
import Events
import Foundation
import Persistence
import PostgresNIO
import Subscriptions

/// One hold, settle or release, and the time it was asked at.
struct HoldWork: Sendable {
    enum Operation: Sendable {
        case hold(CreditHolds.Request)
        case end(CreditHolds.Target, charging: Int64, as: CreditHold.State)
    }

    var operation: Operation
    var now: Date
}

/// What one ``HoldWork`` came to.
enum HoldResult: Sendable {
    case hold(CreditHolds.HoldAnswer)
    case end(CreditHolds.EndAnswer)
}

/// The statements of one group of holds and ends, on its transaction (``CreditHolds``): the group's accounts locked
/// and the holds it names read with what the accounts taking holds have, in one round trip (grants due by the clock,
/// written first, cost one more), then every hold and end
/// in arrival order against the balances the earlier ones left, and what they did written in one statement.
struct HoldGroup: Sendable {
    let ledger: CreditLedger
    let store: CreditHoldStore
    let events: EventRecorder?

    /// What a group did: an answer per work, in order, and the expiries of the holds it left held.
    struct Done: Sendable {
        var results: [HoldResult]
        var expiries: [Date]
    }

    /// A hold as the group has it: as read (or taken here), with what became of its buckets since.
    private struct Known {
        var hold: CreditHold
        var since: [CreditHold.BucketSince]
        /// Taken in this group: nothing was posted to its buckets since.
        var takenHere: Bool
        var endedHere = false
    }

    func run(_ works: [HoldWork], on connection: PostgresConnection) async throws -> Done {
        // The group happens at its commit: the latest time any of its works was asked at.
        let now = works.map(\.now).max() ?? Date()
        var accounts: Set<AccountID> = []
        var ids: [UUID] = []
        var keys: [(account: AccountID, key: String)] = []
        for work in works {
            switch work.operation {
            case .hold(let request):
                accounts.insert(request.account)
                keys.append((request.account, request.idempotencyKey))
            case .end(.id(let id), _, _):
                ids.append(id)
            case .end(.key(let account, let key), _, _):
                accounts.insert(account)
                keys.append((account, key))
            }
        }
        var known: [UUID: Known] = [:]
        var byKey: [UsageRequests.Key: UUID] = [:]
        // Accounts that take a hold need what a spend reads (grants due written, limits), read with the locks; only
        // grants due by the clock cost a statement more. Those that only end holds need nothing more: each hold's read
        // says which of its buckets are still open to its account.
        let taking = Set(
            works.compactMap { work -> AccountID? in
                if case .hold(let request) = work.operation { return request.account }
                return nil
            })
        let locked = try await store.lockAccountsReadHoldsAndStatus(
            accounts: accounts.sorted(), ids: ids, keys: keys, taking: taking.sorted(), at: now, on: connection)
        for read in locked.holds {
            known[read.hold.id] = Known(hold: read.hold, since: read.since, takenHere: false)
            byKey[.init(account: read.hold.account, idempotencyKey: read.hold.idempotencyKey)] = read.hold.id
        }
        let credits = try await Spendable.read(of: taking.sorted(), inputs: locked.inputs, now: now, ledger: ledger, on: connection)
        var balances = locked.inputs.mapValues(\.buckets)
        balances.merge(credits.mapValues(\.live)) { _, spending in spending }
        var drafts: [EventDraft] = credits.sorted { $0.key < $1.key }.flatMap { account, spendable in spendable.openedWindows(account: account) }
        var postings: [LedgerEntry] = []
        var taken: [UUID] = []
        var results: [HoldResult] = []
        // What ends earlier in the group paid of each claim: the claims were read once, before any of them.
        var claimsPaid: [String: Int64] = [:]

        for work in works {
            switch work.operation {
            case .hold(let request):
                let key = UsageRequests.Key(account: request.account, idempotencyKey: request.idempotencyKey)
                let unlimited = credits[request.account]?.credits.meters[request.meter]?.unlimited == true
                if let id = byKey[key], let existing = known[id]?.hold {
                    // The same request again: its meter, amount and expiry (a retry sends the same body).
                    guard existing.meter == request.meter, existing.amount == request.amount, existing.expiresIn == request.expiresIn else {
                        results.append(.hold(.keyReused(existing)))
                        continue
                    }
                    let remaining = unlimited ? nil : CreditHolds.available(request.meter, in: balances[request.account] ?? [])
                    results.append(.hold(.held(existing, remaining: remaining)))
                    continue
                }
                let debits: [HoldSettlement.Debit]
                let remaining: Int64?
                switch Spending.spend(request.amount, of: request.meter, unlimited: unlimited, from: balances[request.account] ?? []) {
                case .unlimited:
                    (debits, remaining) = ([], nil)
                case .spent(let plan, let left, let after):
                    (debits, remaining) = (plan.debits.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }, left)
                    balances[request.account] = after
                case .insufficient(let available):
                    results.append(.hold(.insufficient(available: available)))
                    continue
                }
                let hold = CreditHold(
                    id: .systemRandom(), account: request.account, idempotencyKey: request.idempotencyKey, meter: request.meter,
                    amount: request.amount, debits: debits, createdAt: work.now,
                    expiresAt: work.now.addingTimeInterval(Double(request.expiresIn)))
                known[hold.id] = Known(hold: hold, since: [], takenHere: true)
                byKey[key] = hold.id
                taken.append(hold.id)
                postings += CreditHold.debitEntries(of: hold)
                // The hold takes the last credit as a spend would: the app hears it as a spend's `credits.depleted`.
                drafts += CreditChanges.depleted(
                    meter: request.meter, remaining: remaining, account: request.account, spendKey: CreditHold.debitKey(hold.id, 0),
                    environment: credits[request.account]?.environment ?? .production)
                if let remaining {
                    drafts +=
                        credits[request.account]?.warnings(
                            request.meter, from: remaining + request.amount, to: remaining, account: request.account, catalogue: ledger.catalogue)
                        ?? []
                }
                results.append(.hold(.held(hold, remaining: remaining)))

            case .end(let target, let amount, let state):
                let id: UUID?
                switch target {
                case .id(let held): id = held
                case .key(let account, let key): id = byKey[.init(account: account, idempotencyKey: key)]
                }
                guard let id, var entry = known[id] else {
                    results.append(.end(.notFound))
                    continue
                }
                // Expired or not by when it was asked (a later request in the group must not expire it), ended at the
                // group's time.
                let answer = end(
                    &entry, charging: amount, as: state, askedAt: work.now, now: now, balances: &balances, claimsPaid: &claimsPaid,
                    postings: &postings)
                known[id] = entry
                results.append(.end(answer))
            }
        }
        let takenHolds = taken.compactMap { known[$0]?.hold }
        let ended = known.values.filter { $0.endedHere && !$0.takenHere }.map(\.hold)
        try await store.write(posting: postings, taken: takenHolds, ended: ended, at: now, on: connection)
        try await events?.record(drafts, now: now, on: connection)
        return Done(results: results, expiries: takenHolds.filter { $0.state == .held }.map(\.expiresAt))
    }

    /// Ends `entry`'s hold (if still held) by ``HoldSettlement``'s rule, and gives what goes back to the balances.
    private func end(
        _ entry: inout Known, charging amount: Int64, as state: CreditHold.State, askedAt: Date, now: Date,
        balances: inout [AccountID: [AccountCredits.LiveBalance]], claimsPaid: inout [String: Int64], postings: inout [LedgerEntry]
    ) -> CreditHolds.EndAnswer {
        var hold = entry.hold
        if hold.state != .held {
            let repeated = hold.state == state && (state != .settled || hold.charged == amount)
            return repeated ? .ended(hold) : .alreadyEnded(hold)
        }
        // Past its expiry a hold is the expiry job's, whoever asks first.
        let ending: CreditHold.State = askedAt >= hold.expiresAt ? .expired : state
        let charge = ending == .expired ? 0 : amount
        guard charge <= hold.amount else { return .overHeld(hold) }
        // An account taking a hold in the group has its live buckets; for one only ending holds, the hold's read says.
        let open = balances[hold.account].map { Set($0.map(\.bucket.key)) } ?? Set(entry.since.filter { $0.open == true }.map(\.bucket))
        let destinations =
            entry.takenHere
            ? CreditHold.destinations(ofUntouched: hold.debits, open: open) : CreditHold.destinations(entry.since, open: open, account: hold.account)
        let claims = CreditHold.claims(entry.since, less: claimsPaid)
        // An unlimited meter's hold took nothing from any bucket: it is charged without a ledger row.
        let outcome =
            hold.debits.isEmpty
            ? HoldSettlement.Outcome(charged: [], returns: [], lapsed: 0)
            : HoldSettlement.settle(hold.debits, charge: charge, destination: { destinations[$0] }, claims: { claims[$0] ?? [] })
        guard let outcome else { return .overHeld(hold) }
        for payment in outcome.payments { claimsPaid[payment.claim, default: 0] += payment.amount }
        postings += CreditHold.endEntries(of: hold, outcome: outcome)
        // What comes back to a window a standing refund took from (or found empty), or through a carry a standing
        // refund of the upgrade took, the refund takes (not the customer's while it stands).
        let takes = CreditHold.refundTakes(
            of: outcome, debits: hold.debits, since: entry.since, account: hold.account, key: { CreditHold.returnKey(hold.id, $0) })
        postings += takes
        // What came back, less what the refund took of it in the same bucket (a top-up can take both: a debit of its
        // own given back, another's through a carry a refund took).
        for change in outcome.returns.map({ ($0.bucket, $0.amount) }) + takes.map({ ($0.bucket, $0.delta) }) {
            if let index = balances[hold.account]?.firstIndex(where: { $0.bucket.key == change.0 }) {
                balances[hold.account]?[index].balance += change.1
            }
        }
        let taken = takes.reduce(0) { $0 - $1.delta }
        (hold.state, hold.charged, hold.returned, hold.lapsed, hold.endedAt) = (ending, charge, outcome.returned - taken, outcome.lapsed + taken, now)
        entry.hold = hold
        entry.endedHere = true
        return ending == state ? .ended(hold) : .alreadyEnded(hold)
    }
}
