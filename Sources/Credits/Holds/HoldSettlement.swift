/// What becomes of a hold's credits when it ends: the part charged stays taken, the rest goes back — each credit to
/// where its bucket's unspent credits are now.
///
/// A hold took `debits` from buckets in spend order (``SpendPlan``). It is charged from the front of that order, as a
/// spend of the charged amount would have been, and the rest goes back from the tail. Each debit's rest goes to
/// `destination(bucket)`: the bucket itself while it is open, the bucket its unspent credits moved to (an upgrade's
/// carry-over), or nowhere (`nil`) when the bucket closed meanwhile — a cycle reset, a refund that took its credits
/// back. Credits that go nowhere lapse, as they would have had they never been held: a hold neither saves credits
/// from a reset or a refund nor costs the customer any that would have survived them, so the end is the same
/// whichever came first.
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

    /// How a hold ends.
    public struct Outcome: Sendable, Equatable {
        /// What each debit keeps as charged, in spend order.
        public var charged: [Debit]
        public var returns: [Return]
        /// Credits of buckets closed meanwhile: gone, as unspent credits of those buckets are.
        public var lapsed: Int64

        public var returned: Int64 { returns.reduce(0) { $0 + $1.amount } }

        public init(charged: [Debit], returns: [Return], lapsed: Int64) {
            self.charged = charged
            self.returns = returns
            self.lapsed = lapsed
        }
    }

    /// Ends a hold of `debits` charging `charge` (0 for a release; at most the held amount, else `nil`).
    public static func settle(_ debits: [Debit], charge: Int64, destination: (String) -> String?) -> Outcome? {
        let held = debits.reduce(Int64(0)) { $0 + $1.amount }
        guard charge >= 0, charge <= held, debits.allSatisfy({ $0.amount > 0 }) else { return nil }
        var left = charge
        var outcome = Outcome(charged: [], returns: [], lapsed: 0)
        for debit in debits {
            let kept = min(debit.amount, left)
            left -= kept
            if kept > 0 { outcome.charged.append(Debit(bucket: debit.bucket, amount: kept)) }
            let rest = debit.amount - kept
            guard rest > 0 else { continue }
            if let target = destination(debit.bucket) {
                outcome.returns.append(Return(bucket: target, from: debit.bucket, amount: rest))
            } else {
                outcome.lapsed += rest
            }
        }
        return outcome
    }
}
