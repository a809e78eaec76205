/// The credits of an account's top-up bucket as lots (its purchases, support's credits, upgrades' carry-overs), spent
/// first in, first out, and what each row of the bucket drew on them: what ``PurchaseConsumption`` reads a pack's use
/// from. The lots hold what the bucket holds, whatever the order of its rows: every row that takes credits draws, and
/// what comes back returns to the lots its row drew on, the last drawn first.
struct ConsumptionLots {
    struct Lot {
        let key: String
        var left: Int64
    }

    struct Draw {
        let lot: Int
        var amount: Int64
    }

    /// Credits a take drew from another lot than its own because its own were out.
    private struct Loan {
        let lot: Int
        var amount: Int64
        let by: Int
    }

    private(set) var lots: [Lot] = []
    /// What each row (by position) drew from each lot, in the order drawn.
    private var draws: [Int: [Draw]] = [:]
    /// What takes drew from other lots than their own (a pack refunded while its credits are held or spent), by their
    /// own lot: those credits, coming back to it, are the others' again, and the take then stands on its own lot — as
    /// had they come back before it.
    private var loans: [Int: [Loan]] = [:]

    /// All the lots hold: the bucket's balance.
    var left: Int64 { lots.reduce(0) { $0 + $1.left } }

    var keys: [String] { lots.map(\.key) }

    /// Whether the row at `position` drew on the lots (nothing, perhaps).
    func hasDrawn(at position: Int) -> Bool { draws[position] != nil }

    /// What each row (by position) holds drawn from the lot `key` at the end.
    func drawn(from key: String) -> [Int: Int64] {
        draws.compactMapValues { drawn in
            let amount = drawn.filter { lots[$0.lot].key == key }.reduce(0) { $0 + $1.amount }
            return amount > 0 ? amount : nil
        }
    }

    /// Credits `amount` to the lot `key`, a new one at the end if there is none.
    mutating func add(_ amount: Int64, to key: String) {
        if let index = lots.firstIndex(where: { $0.key == key }) {
            lots[index].left += amount
        } else {
            lots.append(Lot(key: key, left: amount))
        }
    }

    /// Credits back from a debit of another bucket, which reach this one only through an upgrade's carry: they join its
    /// lot (the last carry's: with carries of two windows, which one they followed the rows here do not say), as the
    /// refund of the upgrade counts them (SubscriptionCredits' `standing(carryOver:)`).
    mutating func arrive(_ amount: Int64, as key: String) {
        if let index = lots.lastIndex(where: { $0.key.hasPrefix("carry:") && $0.key.hasSuffix(":in") }) {
            lots[index].left += amount
        } else {
            lots.append(Lot(key: key, left: amount))
        }
    }

    /// Draws `amount` from the lots, from `first` (a take's own lot) and then oldest first, and records it under the
    /// row at `position` — even when nothing is drawn (a claw-back all claimed, a bucket all spent): its reversal then
    /// gives back what it drew, nothing, rather than making up a lot.
    mutating func draw(_ amount: Int64, at position: Int, first: String? = nil) {
        if draws[position] == nil { draws[position] = [] }
        var owed = max(amount, 0)
        let own = first.flatMap { key in lots.firstIndex { $0.key == key } }
        for index in (own.map { [$0] } ?? []) + Array(lots.indices) where owed > 0 && lots[index].left > 0 {
            let take = min(owed, lots[index].left)
            lots[index].left -= take
            owed -= take
            draws[position, default: []].append(Draw(lot: index, amount: take))
            if let own, index != own { loans[own, default: []].append(Loan(lot: index, amount: take, by: position)) }
        }
    }

    /// Moves `amount` of what the row at `debit` drew to the row at `position`, the front first — a hold's charge takes
    /// over what its debit held (the rest went back, the last drawn first), whatever came back to the bucket between —
    /// and draws what the debit no longer holds.
    mutating func transfer(_ amount: Int64, drawnBy debit: Int, to position: Int) {
        var owed = amount
        var drawn = draws[debit] ?? []
        var moved: [Draw] = []
        while owed > 0, let first = drawn.first {
            let part = min(owed, first.amount)
            moved.append(Draw(lot: first.lot, amount: part))
            owed -= part
            if part == first.amount { drawn.removeFirst() } else { drawn[0].amount -= part }
        }
        draws[debit] = drawn
        draws[position] = moved
        if owed > 0 { draw(owed, at: position) }
    }

    /// Gives `amount` back to the lots the row at `position` drew on, the last drawn first; beyond them, a new lot `key`.
    mutating func giveBack(_ amount: Int64, drawnBy position: Int, as key: String) {
        // A take given back itself (a refund reversed) gives the others' credits back to them from its own draw.
        for lot in loans.keys { loans[lot]?.removeAll { $0.by == position } }
        var back = amount
        while back > 0, let last = draws[position]?.popLast() {
            let returned = min(back, last.amount)
            back -= returned
            if returned < last.amount { draws[position]?.append(Draw(lot: last.lot, amount: last.amount - returned)) }
            credit(returned, to: last.lot)
        }
        if back > 0 { lots.append(Lot(key: key, left: back)) }
    }

    /// Credits `amount` to the lot `index`, first repaying what takes of it drew from others while it was out.
    private mutating func credit(_ amount: Int64, to index: Int) {
        var amount = amount
        while amount > 0, let loan = loans[index]?.popLast() {
            let repaid = min(amount, loan.amount)
            // The lot repaid may itself have lent out while its credits were out (its refund took a third's): it repays
            // in turn, so a chain of refunds stands as had the credits come back before the first.
            credit(repaid, to: loan.lot)
            amount -= repaid
            if repaid < loan.amount { loans[index]?.append(Loan(lot: loan.lot, amount: loan.amount - repaid, by: loan.by)) }
            // The take now stands on its own lot for what was repaid: its reversal gives that back there.
            var drawn = draws[loan.by] ?? []
            var moving = repaid
            for from in drawn.indices.reversed() where moving > 0 && drawn[from].lot == loan.lot {
                let part = min(moving, drawn[from].amount)
                drawn[from].amount -= part
                moving -= part
            }
            drawn.append(Draw(lot: index, amount: repaid - moving))
            draws[loan.by] = drawn.filter { $0.amount > 0 }
        }
        lots[index].left += amount
    }
}
