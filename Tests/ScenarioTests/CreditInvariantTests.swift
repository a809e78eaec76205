import Credits
import Foundation
import Subscriptions
import TestSupport
import Testing

/// The credit invariants (issue 39), whatever Apple sends and in whatever order: random histories of one
/// subscription built from every kind of notification — renewals on time and reported early, upgrades on top of
/// them, downgrades, refunds of the period in force, of earlier ones and of a near-duplicate transaction, reversals,
/// grace, billing retry, recovery, expiry and family revocation — each signed, verified and delivered in order and
/// shuffled with duplicates, then checked at many instants:
///
/// 1. an account without an entitling source holds no paid-cycle credits;
/// 2. no live window holds credits that no period covers (a known period, started, not ended, not revoked);
/// 3. `remaining` is the sum of the live buckets once what is due is posted.
///
/// The expectations are the documented promises (docs/credits.md), not what the rules compute.
@Suite("Credit invariants over random histories")
struct CreditInvariantTests {
    static let histories = 400

    @Test("every random history keeps the three invariants, in order and shuffled with duplicates")
    func randomHistories() async throws {
        var random = SplitMix64(state: 20_261_126)
        var failures: [String] = []
        for index in 0..<Self.histories {
            let events = Self.history(using: &random)
            let scenario = try Self.scenario(events, index: index)
            let deliveries = try await ScenarioTests.signedAndVerified(scenario)
            var orders = [deliveries]
            var shuffled = deliveries.shuffled(using: &random)
            shuffled.insert(deliveries.randomElement(using: &random)!, at: Int.random(in: 0...shuffled.count, using: &random))
            orders.append(shuffled)
            for (orderIndex, order) in orders.enumerated() {
                var world = ScenarioWorld(catalogue: ScenarioWorld.catalogue)
                var clock = Date.distantPast
                for (delivery, at) in order {
                    clock = max(clock, at)
                    world.deliver(delivery, now: clock)
                }
                let last = events.map(\.at).max() ?? 0
                for day in stride(from: 0.0, through: last + 70, by: 2.5) where Scenario.date(day) >= clock {
                    if let problem = Self.violation(in: world, at: Scenario.date(day)) {
                        failures.append(
                            "history \(index) (\(orderIndex == 0 ? "in order" : "shuffled")), day \(day): \(problem)\n    \(Self.describe(events))")
                        break
                    }
                }
            }
            await Task.yield()
        }
        #expect(failures.isEmpty, "\(failures.count) violations; the first: \(failures.prefix(3).joined(separator: "\n"))")
    }

    /// The first invariant `world` breaks at `now`, after posting what is due then.
    static func violation(in original: ScenarioWorld, at now: Date) -> String? {
        var world = original
        for id in world.facts.keys.sorted() { world.settle(id, now: now) }
        let account = Scenario.account("A")
        // The account's own grants due (the free tier's month), as a spend writes them.
        let owned = Set(world.derivations().filter { $0.state.accountId == account }.map(\.state.originalTransactionId))
        let before = world.ledger.liveBuckets(account: account, cycleOf: owned, meter: nil, at: now).map {
            AccountCredits.LiveBalance(bucket: $0, balance: world.ledger.balance(of: $0.key))
        }
        let states = world.derivations().map(\.state).filter { $0.accountId == account }
        for operation in AccountCredits.grantsDue(account: account, subscriptions: states, catalogue: world.catalogue, live: before, now: now) {
            world.ledger.apply(operation)
        }
        let (status, credits, subscriptions) = world.status(of: account, now: now)
        let derivations = world.derivations().filter { $0.state.accountId == account }
        let live = world.ledger.liveBuckets(account: account, cycleOf: Set(subscriptions.map(\.originalTransactionId)), meter: nil, at: now)
        let cycle = live.filter { $0.kind == .cycle && world.ledger.balance(of: $0.key) > 0 }
        if !status.entitled, let bucket = cycle.first {
            return "not entitled (\(status.state.rawValue)) but \(bucket.key) holds \(world.ledger.balance(of: bucket.key))"
        }
        for bucket in cycle {
            let period = derivations.flatMap(\.periods).first { $0.key == bucket.billingPeriod }
            guard let period else { return "\(bucket.key) holds credits of no known period" }
            if let revocation = period.revocation, revocation.prorated == nil, revocation.date <= now {
                return "\(bucket.key) holds \(world.ledger.balance(of: bucket.key)) of a period revoked at \(revocation.date)"
            }
            if period.start > now { return "\(bucket.key) holds credits of a period that has not started" }
        }
        for (meter, entry) in credits.meters where !entry.unlimited {
            let sum = live.filter { $0.meter == meter }.reduce(Int64(0)) { $0 + max(world.ledger.balance(of: $1.key), 0) }
            if entry.remaining != sum { return "\(meter) remaining \(entry.remaining.map(String.init) ?? "nil") ≠ live buckets' \(sum)" }
        }
        return nil
    }

    // MARK: - Histories

    /// One event of a history, as a scenario file writes it.
    struct Step {
        var notification: String
        var at: Double
        var status: Int32
        var tx: [String: Any]
        var renewal: [String: Any]
    }

    static func describe(_ steps: [Step]) -> String {
        steps.map { "\($0.notification)@\(String(format: "%.2f", $0.at)) \($0.tx["id"] ?? "")\($0.tx["revoked"] != nil ? " revoked" : "")" }
            .joined(separator: ", ")
    }

    static let products = [("reader.monthly", 4_990), ("pro.monthly", 9_990), ("max.monthly", 19_990)]

    /// A random history Apple could send (and a few it would not: a refund naming a transaction milliseconds into the
    /// period in force, renewals reported a whole period early).
    static func history(using random: inout SplitMix64) -> [Step] {
        var steps: [Step] = []
        var productIndex = Int.random(in: 0..<2, using: &random)
        var from = 0.0
        var to = 30.0
        var now = 0.0
        var transaction = 0
        var current: [String: Any] = [:]
        func tx(_ id: Int, _ start: Double, _ end: Double, product: Int, extra: [String: Any] = [:]) -> [String: Any] {
            [
                "id": "t\(id)", "product": products[product].0, "from": start, "to": end, "period": "w-t\(id)", "price": products[product].1,
                "token": "A",
            ].merging(extra) { $1 }
        }
        current = tx(0, from, to, product: productIndex)
        steps.append(Step(notification: "SUBSCRIBED/INITIAL_BUY", at: 0, status: 1, tx: current, renewal: ["autoRenew": 1]))
        var refunded: [String: Any]?
        for _ in 0..<Int.random(in: 2...8, using: &random) {
            switch Int.random(in: 0..<11, using: &random) {
            case 0, 1:  // renewal: on time, or reported early
                now = Bool.random(using: &random) ? to : max(now, to - Double.random(in: 0...30, using: &random))
                transaction += 1
                from = to
                to = from + 30
                current = tx(transaction, from, to, product: productIndex)
                steps.append(Step(notification: "DID_RENEW", at: now, status: 1, tx: current, renewal: ["autoRenew": 1]))
            case 2:  // upgrade inside the period in force
                guard productIndex < 2, max(now, from) + 0.5 < to - 0.5 else { continue }
                now = max(now, from) + Double.random(in: 0.5...min(10, to - 0.5 - max(now, from)), using: &random)
                productIndex += 1
                transaction += 1
                from = now
                to = now + 30
                current = tx(transaction, from, to, product: productIndex)
                steps.append(Step(notification: "DID_CHANGE_RENEWAL_PREF/UPGRADE", at: now, status: 1, tx: current, renewal: ["autoRenew": 1]))
            case 3:  // downgrade at the next renewal
                guard productIndex > 0 else { continue }
                steps.append(
                    Step(
                        notification: "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", at: now, status: 1, tx: current,
                        renewal: ["autoRenew": 1, "next": products[productIndex - 1].0]))
            case 4:  // refund of the period in force
                now = min(max(now, from) + Double.random(in: 0...5, using: &random), to)
                var revoked = current
                revoked["revoked"] = now
                refunded = revoked
                steps.append(Step(notification: "REFUND", at: now, status: 5, tx: revoked, renewal: ["autoRenew": 0]))
            case 5:  // a refund naming another transaction milliseconds into the period in force
                now = min(max(now, from) + Double.random(in: 0...5, using: &random), to)
                transaction += 1
                let near = tx(transaction, from + 0.000_000_05, to, product: productIndex, extra: ["revoked": now])
                steps.append(Step(notification: "REFUND", at: now, status: 5, tx: near, renewal: ["autoRenew": 0]))
            case 6:  // refund reversed
                guard let revoked = refunded else { continue }
                now += 1
                var restored = revoked
                restored.removeValue(forKey: "revoked")
                steps.append(Step(notification: "REFUND_REVERSED", at: now, status: 1, tx: restored, renewal: ["autoRenew": 1]))
                refunded = nil
            case 7:  // grace at the period's end, maybe recovered
                now = max(now, to)
                steps.append(
                    Step(
                        notification: "DID_FAIL_TO_RENEW/GRACE_PERIOD", at: now, status: 4, tx: current,
                        renewal: ["autoRenew": 1, "retry": true, "grace": now + 6]))
                if Bool.random(using: &random) {
                    now += Double.random(in: 0.5...5, using: &random)
                    transaction += 1
                    from = now
                    to = now + 30
                    current = tx(transaction, from, to, product: productIndex)
                    steps.append(Step(notification: "DID_RENEW/BILLING_RECOVERY", at: now, status: 1, tx: current, renewal: ["autoRenew": 1]))
                }
            case 8:  // billing retry without grace
                now = max(now, to)
                steps.append(
                    Step(
                        notification: "DID_FAIL_TO_RENEW", at: now, status: 3, tx: current, renewal: ["autoRenew": 1, "retry": true]))
            case 9:  // expiry
                now = max(now, to)
                steps.append(
                    Step(
                        notification: "EXPIRED/VOLUNTARY", at: now, status: 2, tx: current, renewal: ["autoRenew": 0, "intent": 1]))
            default:  // family sharing revoked
                now = min(max(now, from) + Double.random(in: 0...5, using: &random), to)
                var revoked = current
                revoked["revoked"] = now
                revoked["revocationType"] = "FAMILY_REVOKE"
                steps.append(Step(notification: "REVOKE", at: now, status: 5, tx: revoked, renewal: ["autoRenew": 0]))
            }
        }
        return steps
    }

    /// The history as a scenario (its expectation unused).
    static func scenario(_ steps: [Step], index: Int) throws -> Scenario {
        let events: [[String: Any]] = steps.map {
            ["notification": $0.notification, "at": $0.at, "status": $0.status, "tx": $0.tx, "renewal": $0.renewal]
        }
        let object: [String: Any] = [
            "name": "random history \(index)", "source": "CreditInvariantTests", "events": events,
            "expect": ["at": 0, "account": "A", "state": "any", "entitled": false, "credits": [String: Int]()],
        ]
        return try JSONDecoder().decode(Scenario.self, from: try JSONSerialization.data(withJSONObject: object))
    }
}
