/// What becomes of a hold's credits when it ends: the part charged stays taken, the rest goes back — each credit to
/// where its bucket's unspent credits are now.
///
/// A hold took `debits` from buckets in spend order (``SpendPlan``). It is charged from the front of that order, as a
/// spend of the charged amount would have been, and the rest goes back from the tail. Each debit's rest goes to
/// `destination(bucket)`: the bucket itself while it is open (or, closed by a refund that took from it, for that refund
/// to take them: ``CreditHold/refundTakes(of:debits:since:account:key:)``), the bucket its unspent credits moved to (an
/// upgrade's carry-over), or nowhere (`nil`) when the bucket closed meanwhile — a cycle reset, a refund that found
/// nothing left in it. Credits that go nowhere lapse, as they would have had they never been held: a hold neither saves credits
/// from a reset or a refund nor costs the customer any that would have survived them, so the end is the same
/// whichever came first.
///
/// A bucket that stays open can still owe: a top-up refunded while credits of it were out (in this hold, or in a spend
/// given back later), or a prorated refund's claw-back that found too little, took only what the bucket had then, and
/// recorded the rest as a ``Claim`` on the credits still out. What goes back to a bucket — its own credits, or a
/// window's that an upgrade carried to a top-up — pays its claims made after the debit first, oldest first, and lapses
/// that much ("Where credits go back", docs/credits.md): the customer ends where the refund would have left them had
/// the credits come back before it.
public enum HoldSettlement {
    /// One bucket's share of a hold.
    public struct Debit: Sendable, Equatable {
        public var bucket: String
        public var amount: Int64

        public init(bucket: String, amount: Int64) {
            self.bucket = bucket
            self.amount = amount
        }
    }

    /// Credits given back to a bucket, from the debit of `from`.
    public struct Return: Sendable, Equatable {
        public var bucket: String
        public var from: String
        public var amount: Int64

        public init(bucket: String, from: String, amount: Int64) {
            self.bucket = bucket
            self.from = from
            self.amount = amount
        }
    }

    /// What a take-back of a bucket (a top-up's refund, a claw-back) could not take because credits of the bucket were
    /// out when it came, still unpaid: `key` is the take-back's claim row (``CreditClaims``).
    public struct Claim: Sendable, Equatable, Codable {
        public var key: String
        public var outstanding: Int64

        public init(key: String, outstanding: Int64) {
            self.key = key
            self.outstanding = outstanding
        }
    }

    /// Credits of the debit of `from` that paid the claim `claim` on `bucket` (where they went back) instead of going
    /// back.
    public struct Payment: Sendable, Equatable {
        public var claim: String
        public var bucket: String
        public var from: String
        public var amount: Int64

        public init(claim: String, bucket: String, from: String, amount: Int64) {
            self.claim = claim
            self.bucket = bucket
            self.from = from
            self.amount = amount
        }
    }

    /// How a hold ends.
    public struct Outcome: Sendable, Equatable {
        /// What each debit keeps as charged, in spend order.
        public var charged: [Debit]
        /// What goes back to the customer's buckets, after claims are paid.
        public var returns: [Return]
        /// What went to claims on the debits' buckets (counted in ``lapsed``).
        public var payments: [Payment]
        /// Credits of buckets closed meanwhile (gone, as unspent credits of those buckets are), and those that paid
        /// claims: the customer does not get them back.
        public var lapsed: Int64

        public var returned: Int64 { returns.reduce(0) { $0 + $1.amount } }

        public init(charged: [Debit], returns: [Return], payments: [Payment] = [], lapsed: Int64) {
            self.charged = charged
            self.returns = returns
            self.payments = payments
            self.lapsed = lapsed
        }

        /// Where the debit of `bucket` went back (what it returned, or paid claims on), if anywhere.
        public func destination(of bucket: String) -> String? {
            returns.first { $0.from == bucket }?.bucket ?? payments.first { $0.from == bucket }?.bucket
        }

        /// What the debit of `bucket` puts back into its destination before claims take their part: the ledger's
        /// return row, beside whose payment rows the balance moves by the return's amount.
        public func gross(from bucket: String) -> Int64 {
            returns.filter { $0.from == bucket }.reduce(0) { $0 + $1.amount } + payments.filter { $0.from == bucket }.reduce(0) { $0 + $1.amount }
        }
    }

    /// Ends a hold of `debits` charging `charge` (0 for a release; at most the held amount, else `nil`). `claims`
    /// gives, by a debit's bucket, the unpaid claims on the bucket its credits go back to (`destination`) made after
    /// the debits, oldest first.
    public static func settle(
        _ debits: [Debit], charge: Int64, destination: (String) -> String?, claims: (String) -> [Claim] = { _ in [] }
    ) -> Outcome? {
        let held = debits.reduce(Int64(0)) { $0 + $1.amount }
        guard charge >= 0, charge <= held, debits.allSatisfy({ $0.amount > 0 }) else { return nil }
        var left = charge
        var outcome = Outcome(charged: [], returns: [], lapsed: 0)
        var paid: [String: Int64] = [:]
        for debit in debits {
            let kept = min(debit.amount, left)
            left -= kept
            if kept > 0 { outcome.charged.append(Debit(bucket: debit.bucket, amount: kept)) }
            var rest = debit.amount - kept
            guard rest > 0 else { continue }
            guard let target = destination(debit.bucket) else {
                outcome.lapsed += rest
                continue
            }
            for claim in claims(debit.bucket) where rest > 0 {
                let pay = min(rest, claim.outstanding - paid[claim.key, default: 0])
                guard pay > 0 else { continue }
                paid[claim.key, default: 0] += pay
                rest -= pay
                outcome.payments.append(Payment(claim: claim.key, bucket: target, from: debit.bucket, amount: pay))
                outcome.lapsed += pay
            }
            if rest > 0 { outcome.returns.append(Return(bucket: target, from: debit.bucket, amount: rest)) }
        }
        return outcome
    }
}
