import Entitlements
import Foundation
import Subscriptions

/// Credits held for work whose cost is known only at its end (`POST /v1/accounts/{id}/holds`): taken from buckets
/// in spend order, then settled, released or expired (docs/credits.md, "Holds").
public struct CreditHold: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case held, settled, released, expired
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "held": self = .held
            case "settled": self = .settled
            case "released": self = .released
            case "expired": self = .expired
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .held: return "held"
            case .settled: return "settled"
            case .released: return "released"
            case .expired: return "expired"
            case .unknown(let text): return text
            }
        }
    }

    public var id: UUID
    public var account: AccountID
    public var idempotencyKey: String
    public var meter: String
    public var amount: Int64
    public var debits: [HoldSettlement.Debit]
    public var createdAt: Date
    public var expiresAt: Date
    /// The `expiresIn` it was asked with, in seconds (`expiresAt` is `createdAt` plus it, both to the microsecond).
    public var expiresIn: Int { Int(expiresAt.timeIntervalSince(createdAt).rounded()) }
    public var state: State
    public var charged: Int64?
    public var returned: Int64?
    public var lapsed: Int64?
    public var endedAt: Date?

    public init(
        id: UUID, account: AccountID, idempotencyKey: String, meter: String, amount: Int64, debits: [HoldSettlement.Debit], createdAt: Date,
        expiresAt: Date, state: State = .held, charged: Int64? = nil, returned: Int64? = nil, lapsed: Int64? = nil, endedAt: Date? = nil
    ) {
        (self.id, self.account, self.idempotencyKey, self.meter, self.amount) = (id, account, idempotencyKey, meter, amount)
        (self.debits, self.createdAt, self.expiresAt, self.state) = (debits, createdAt, expiresAt, state)
        (self.charged, self.returned, self.lapsed, self.endedAt) = (charged, returned, lapsed, endedAt)
    }

    /// The ledger key of a hold's debit `index`.
    public static func debitKey(_ id: UUID, _ index: Int) -> String { "hold:\(id.lowercasedText):\(index)" }
}

extension CreditHold {
    /// What became of a bucket a hold took from since the hold (sql/0037's read): its kind, the top-up an upgrade
    /// carried its unspent credits to while that carry stands, whether a refund of its period took from it, not
    /// reversed (a claw-back does not close it, sql/0057), and the claims on where its credits go back.
    public struct BucketSince: Codable, Sendable, Equatable {
        public var bucket: String
        /// `nil` for a bucket no longer stored (it lapses).
        public var kind: String?
        /// Live at the read's time and the hold's account's (its own, or of a subscription it holds): credits can go
        /// back to it (sql/0040; `nil` from a read before it).
        public var open: Bool?
        public var carriedTo: String?
        /// A refund took from it since and was not reversed (`refund:…`; a claw-back's `clawback:…` not, since
        /// sql/0057), or — an App Store window — its subscription stands refunded in the window's period, whether or
        /// not the refund found anything to take (sql/0060).
        public var refunded: Bool
        /// The unpaid claims made since on the bucket its credits go back to (itself, or the top-up of a carry
        /// standing), oldest first (sql/0038; absent from a read of sql/0037's).
        public var claims: [HoldSettlement.Claim]?
        /// The key of the refund's row under which it takes what comes back (``refunded``; `nil` from a read before
        /// sql/0059): for an App Store window, the key the credit rules give the refund's removal from it, named from
        /// the subscription, whether or not the refund found anything to take (sql/0060); else the first row of the
        /// refund that took from it since and stands (sql/0059).
        public var refundedBy: String?
        /// The account the bucket is of at the read: its own, or its subscription's holder (sql/0059).
        public var owner: String?
        /// The key of the last row of a refund of the upgrade that took the carry to ``carriedTo`` and stands
        /// (`refund:<stamp>:carry:…:in`, sql/0064): what comes back through the carry is that refund's to take
        /// (``CreditHold/refundTakes(of:debits:since:account:key:)``) until it is reversed. `nil` while no refund took
        /// the carry, and from a read before sql/0064, which left a taken carry out of ``carriedTo``.
        public var carryTakenBy: String?

        public init(
            bucket: String, kind: String?, open: Bool? = nil, carriedTo: String? = nil, refunded: Bool = false, claims: [HoldSettlement.Claim]? = nil,
            refundedBy: String? = nil, owner: String? = nil, carryTakenBy: String? = nil
        ) {
            (self.bucket, self.kind, self.open, self.carriedTo, self.refunded, self.claims) = (bucket, kind, open, carriedTo, refunded, claims)
            (self.refundedBy, self.owner, self.carryTakenBy) = (refundedBy, owner, carryTakenBy)
        }

        /// The key under which a standing refund of this window takes what comes back to it for `account`
        /// (``CreditHold/refundTakes(of:debits:since:account:key:)``): a subscription's cycle window (the buckets a
        /// period's refund takes from; a top-up's refund takes back its own purchase only) that a standing refund
        /// took from or, the App Store's, left empty (``refunded``), no carry standing, still `account`'s.
        public func refund(takingFor account: AccountID) -> String? {
            guard refunded, carriedTo == nil, CreditBucket.Kind(kind ?? "") == .cycle, owner == account.text else { return nil }
            return refundedBy.map(Self.refund(ofRow:))
        }

        /// The refund whose row `key` is: a take of what came back (`<refund>:back:<return>`,
        /// ``CreditHold/refundTakes(of:debits:since:account:key:)``) is the refund's before its `:back:`. The read names
        /// the first refund row after the debit, which is such a take where the refund removed nothing (a window all
        /// out) and its period is no longer the subscription's (an upgrade since), so the read has no removal's key to
        /// give: taken under the take's whole key, a second return's take would nest in the first's and count as the
        /// first's. Keys written so nested before read back to the refund as well.
        static func refund(ofRow key: String) -> String {
            var refund = Substring(key)
            while let back = refund.range(of: ":back:", options: .backwards),
                refund[back.upperBound...].hasPrefix("hold-return:") || refund[back.upperBound...].hasPrefix("reversal:")
            {
                refund = refund[..<back.lowerBound]
            }
            return String(refund)
        }
    }
}
