import Foundation

/// How much of what a purchase credited was used, per meter.
public struct PurchaseConsumption: Hashable, Sendable, Codable {
    /// Credited and used amounts of one meter.
    public struct Meter: Hashable, Sendable, Codable {
        public var credited: Int64
        public var used: Int64

        public init(credited: Int64, used: Int64) {
            self.credited = credited
            self.used = used
        }

        /// The used share in milliunits (100 000 is all); everything when something was used of nothing.
        public var milliPercent: Int32 {
            guard used > 0 else { return 0 }
            guard credited > 0 else { return 100_000 }
            return Int32(min(used, credited) * 100_000 / credited)
        }
    }

    public var meters: [String: Meter]
    /// Whether Storekeeper credited the purchase to an account at all.
    public var delivered: Bool

    public init(meters: [String: Meter], delivered: Bool) {
        self.meters = meters
        self.delivered = delivered
    }

    /// The largest used share over the meters: the meter the customer leaned on most speaks for the purchase.
    public var milliPercent: Int32 { meters.values.map(\.milliPercent).max() ?? 0 }

    /// A top-up's consumption from the entries of its account's top-up bucket, oldest first. The bucket pools every
    /// top-up (and upgrade carry-overs), so spending is attributed first in, first out: each usage entry draws on the
    /// oldest credits left. A refund takes what is left of its own purchase out of the pool.
    public static func topUp(_ transactionId: String, meter: String, entries: [LedgerEntry]) -> PurchaseConsumption {
        let (credited, spends) = attribution(ofTopUp: transactionId, entries: entries)
        guard credited > 0 else { return PurchaseConsumption(meters: [:], delivered: false) }
        return PurchaseConsumption(meters: [meter: Meter(credited: credited, used: spends.values.reduce(0, +))], delivered: true)
    }

    /// What the top-up `transactionId` credited, and how much of each spend (by its index in `entries`, the bucket's
    /// rows in order) came from it. The lots (purchases, support's credits, carry-overs) are the bucket's credits, spent
    /// first in, first out; every row that takes credits draws on them (a hold's debit and a refund's take too, though
    /// not as use: a refund from its own lot first, then the others'), and what is given back (a spend's reversal, a
    /// hold's return, a refund's reversal) returns to the lots its row drew on, the last drawn first.
    ///
    /// A claw-back (an earlier period refunded at a percentage) draws on the lots as a spend does, but only what it
    /// took: its row is all it owed, and the part not there is a claim (CreditClaims) that credits coming back pay later
    /// — each payment (`claim:clawback:…:paid:<payer>`) draws then, and its reversal gives back what it drew. Its
    /// reversal gives back what it took, not the claimed part, which the claim's reversal cancels.
    public static func attribution(ofTopUp transactionId: String, entries: [LedgerEntry]) -> (credited: Int64, spends: [Int: Int64]) {
        let pool = pool(ofTopUp: transactionId, entries: entries)
        return (pool.credited, pool.spends)
    }

    /// What the lots of the bucket's rows hold at the end, all together: the bucket's balance, whatever the order of its
    /// rows (the property tests check it on generated histories).
    static func leftInLots(_ entries: [LedgerEntry]) -> Int64 {
        pool(ofTopUp: "", entries: entries).lots.left
    }

    private static func pool(ofTopUp transactionId: String, entries: [LedgerEntry]) -> (
        credited: Int64, spends: [Int: Int64], lots: ConsumptionLots
    ) {
        var lots = ConsumptionLots()
        var credited: Int64 = 0
        let grantKey = "topup:\(transactionId)"
        let keys = Set(entries.map(\.operationKey))
        // What each take-back's claim (`claim:<take>`, the one positive row of it: payments are negative) owed beyond
        // what the bucket had, by the take's key.
        var claimed: [String: Int64] = [:]
        for entry in entries where entry.delta > 0 && CreditClaims.isClaim(entry.operationKey) {
            claimed[String(entry.operationKey.dropFirst("claim:".count)), default: 0] += entry.delta
        }
        let claimedTakes = Array(claimed.keys)
        // What each hold's debit (by key) charged: its return rows give back only the rest, the charge keeping it.
        var uncharged: [String: Int64] = [:]
        for entry in entries where entry.delta < 0 {
            if let debit = Self.holdDebit(chargedBy: entry.operationKey) { uncharged[debit, default: 0] += -entry.delta }
        }
        var positions: [String: Int] = [:]
        for (position, entry) in entries.enumerated() where positions[entry.operationKey] == nil { positions[entry.operationKey] = position }
        // The rows that draw on the lots without using credits: holds' debits, refunds' takes and their claims' payments.
        var notUse: Set<Int> = []
        for (position, entry) in entries.enumerated() {
            let key = entry.operationKey
            // The rows that mark a carry's take which moved nothing are not credits.
            if Self.isCarryTakeMarker(key, among: keys) { continue }
            // A hold's debit takes credits out of the lots, as a spend would, but is not usage: what it charged is
            // posted as `usage` (`hold-charge:<id>:<n>`) when it settles, and counts then. What comes back (its return,
            // the charge's offset) goes to the lots the debit drew on, less what the charge keeps: the charge takes over
            // the debit's draw, so a refund between that took the others' credits does not make them the work's. Back
            // from a debit of another bucket (through an upgrade's carry) it joins the carry's lot. Before 2026-12-05
            // the lots counted held credits as there, and those coming back through a carry not at all; before
            // 2026-12-06 a charge drew afresh, first in, first out.
            if key.hasPrefix("hold:") {
                notUse.insert(position)
                lots.draw(-entry.delta, at: position)
                continue
            }
            if let debit = Self.holdDebit(returnedBy: key) {
                if let drawnBy = positions[debit], drawnBy < position {
                    let charged = min(entry.delta, uncharged[debit] ?? 0)
                    uncharged[debit] = (uncharged[debit] ?? 0) - charged
                    lots.giveBack(entry.delta - charged, drawnBy: drawnBy, as: key)
                } else {
                    lots.arrive(entry.delta, as: key)
                }
                continue
            }
            if let debit = Self.holdDebit(chargedBy: key), let drawnBy = positions[debit], drawnBy < position {
                lots.transfer(-entry.delta, drawnBy: drawnBy, to: position)
                continue
            }
            // A claim (CreditClaims) is not credits, nor is its reversal: its take-back took only what the bucket had.
            // A payment of it draws then — a claw-back's as use, a refund's from the refunded lot first — and its
            // reversal gives back what the payment drew.
            if CreditClaims.isClaim(key) || key.hasPrefix("reversed:claim:") {
                guard let take = Self.take(paidBy: key, among: claimedTakes) else { continue }
                if entry.delta < 0 {
                    if !take.hasPrefix("clawback:") { notUse.insert(position) }
                    lots.draw(-entry.delta, at: position, first: Self.lot(takenBy: key, among: lots.keys))
                } else if let drawnBy = Self.drawingRow(givenBackBy: key, at: position, positions: positions, lots: lots) {
                    lots.giveBack(entry.delta, drawnBy: drawnBy, as: key)
                }
                continue
            }
            if entry.delta > 0, let drawnBy = Self.drawingRow(givenBackBy: key, at: position, positions: positions, lots: lots) {
                lots.giveBack(entry.delta - (claimed[entries[drawnBy].operationKey] ?? 0), drawnBy: drawnBy, as: key)
                continue
            }
            if entry.delta > 0 {
                if key == grantKey { credited += entry.delta }
                if key.hasPrefix("spend:"), key.hasSuffix(":reversed") {
                    lots.arrive(entry.delta, as: key)
                } else {
                    lots.add(entry.delta, to: key.hasPrefix("reversed:refund:") ? Self.lot(takenBy: key, among: lots.keys) : key)
                }
            } else if let lot = Self.carryLot(undoneBy: key) {
                // A carry-over that no longer stands leaves the top-ups for its window: what is left of its lot, and
                // beyond that (its credits spent) the others', as it takes from the bucket. One made for credits that
                // were out (`pending:`) never held any.
                notUse.insert(position)
                lots.draw(-entry.delta, at: position, first: lot)
            } else if key.hasPrefix("refund:") {
                // What it took, the rest being its claim: from its own lot first (a carry's take, and what it takes of
                // what came back through the carry, `<take>:back:<return>`, from the carry's); a refund takes the
                // purchase's credits back from the pool, so beyond what is left of that lot, the others', oldest first.
                // Its reversal gives back to the lots it drew on.
                notUse.insert(position)
                lots.draw(-(entry.delta + (claimed[key] ?? 0)), at: position, first: Self.lot(takenBy: key, among: lots.keys))
            } else {
                lots.draw(-entry.delta - (claimed[key] ?? 0), at: position)
            }
        }
        return (credited, lots.drawn(from: grantKey).filter { !notUse.contains($0.key) }, lots)
    }

    /// The earlier row (by position) whose draw on the lots `key` gives back: a spend given back
    /// (`<its debit key>:reversed`), or the reversal (`reversed:<key>`) of another row that drew on them — a claw-back
    /// given back when its refund is reversed or changes kind. Its credits go back to the lots they came from: a new lot
    /// at the end instead let a claw-back taken again (`clawback:…:<n>`) draw on the purchase a second time.
    private static func drawingRow(givenBackBy key: String, at position: Int, positions: [String: Int], lots: ConsumptionLots) -> Int? {
        let original: String
        if key.hasPrefix("spend:"), key.hasSuffix(":reversed") {
            original = String(key.dropLast(":reversed".count))
        } else if key.hasPrefix("reversed:") {
            original = String(key.dropFirst("reversed:".count))
        } else {
            return nil
        }
        guard let found = positions[original], found < position, lots.hasDrawn(at: found) else { return nil }
        return found
    }

    /// The take-back (one of `takes`) whose claim `key` pays (`claim:<take>:paid:<payer>`), or gives the payment back
    /// (`reversed:claim:…`): matched by whole take keys, as an account id in a bucket's key may hold `:paid:`.
    private static func take(paidBy key: String, among takes: [String]) -> String? {
        let body = key.hasPrefix("reversed:") ? key.dropFirst("reversed:".count) : Substring(key)
        guard body.hasPrefix("claim:") else { return nil }
        let claim = body.dropFirst("claim:".count)
        return takes.first { claim.hasPrefix($0 + ":paid:") }
    }

    /// The carry-over lot (`carry:…:in`) a row empties: its reversal's, or the row that nets a carry of credits out.
    static func carryLot(undoneBy key: String) -> String? {
        for prefix in ["reversed:", "pending:"] where key.hasPrefix(prefix + "carry:") { return String(key.dropFirst(prefix.count)) }
        return nil
    }

    /// The two rows that mark a refund's take of a carry made for credits out, which moved nothing —
    /// `refund:<period>:<ms>:pending:carry:…:in` and `refund:<period>:<ms>:carry:…:in` beside it
    /// (SubscriptionCredits.markTaken) — and their reversals: they net to nothing, and neither is a lot nor a spend.
    static func isCarryTakeMarker(_ key: String, among keys: Set<String>) -> Bool {
        let body = key.hasPrefix("reversed:") ? key.dropFirst("reversed:".count) : Substring(key)
        let parts = body.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "refund", !parts[2].isEmpty, parts[2].allSatisfy(\.isNumber) else { return false }
        let (again, take) = carryTake(parts[3])
        if take.hasPrefix("pending:carry:") { return true }
        return take.hasPrefix("carry:") && keys.contains("refund:\(parts[1]):\(parts[2]):\(again)pending:\(take)")
    }

    /// What follows a refund's stamp in a take of a carry-over, split into the counter of a take again (`<n>:`, or
    /// nothing: SubscriptionCredits' `carryTakeKeys`) and the rest (`carry:…` or `pending:carry:…`).
    static func carryTake(_ rest: Substring) -> (again: Substring, take: Substring) {
        guard let colon = rest.firstIndex(of: ":"), colon > rest.startIndex, rest[..<colon].allSatisfy(\.isNumber) else {
            return (rest.prefix(0), rest)
        }
        let take = rest[rest.index(after: colon)...]
        guard take.hasPrefix("carry:") || take.hasPrefix("pending:carry:") else { return (rest.prefix(0), rest) }
        return (rest[...colon], take)
    }

    /// The debit (`hold:<id>:<n>`) whose credits `key`, a hold's charge (`hold-charge:<id>:<n>`), charged.
    static func holdDebit(chargedBy key: String) -> String? {
        guard key.hasPrefix("hold-charge:"), !key.hasSuffix(":offset") else { return nil }
        return "hold:" + key.dropFirst("hold-charge:".count)
    }

    /// The debit (`hold:<id>:<n>`) whose credits `key` gives back: a hold's return (`hold-return:<id>:<n>`) or its
    /// charge's offset (`hold-charge:<id>:<n>:offset`).
    static func holdDebit(returnedBy key: String) -> String? {
        if key.hasPrefix("hold-return:") { return "hold:" + key.dropFirst("hold-return:".count) }
        guard key.hasPrefix("hold-charge:"), key.hasSuffix(":offset") else { return nil }
        return "hold:" + key.dropFirst("hold-charge:".count).dropLast(":offset".count)
    }

    /// The lot a take-back's row concerns: the carry-over lot (one of `lots`) a refunded upgrade's take-back names —
    /// `refund:<period>:<ms>:<lot>`, its claim `claim:refund:…`, the claim's payments `…:<lot>:paid:<payer>` and their
    /// reversals — else the top-up purchase a refund names (`topup:<transaction>`). Matched by parts and whole lot keys,
    /// not by a substring: an account id may hold `:carry:` (`refund:<sale>:topup:<account>:<meter>`).
    static func lot(takenBy key: String, among lots: [String]) -> String {
        var body = Substring(key)
        for prefix in ["reversed:", "claim:"] where body.hasPrefix(prefix) { body = body.dropFirst(prefix.count) }
        let parts = body.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        if parts.count == 4, parts[0] == "refund", !parts[2].isEmpty, parts[2].allSatisfy(\.isNumber),
            case let take = carryTake(parts[3]).take,
            let carry = lots.first(where: { $0.hasPrefix("carry:") && (take == $0 || take.hasPrefix($0 + ":paid:") || take.hasPrefix($0 + ":back:")) }
            )
        {
            return carry
        }
        return refundedGrant(key)
    }

    private static func refundedGrant(_ key: String) -> String {
        let parts = key.split(separator: ":")
        guard let index = parts.firstIndex(of: "refund"), index + 1 < parts.count else { return key }
        return "topup:\(parts[index + 1])"
    }
}
