import Foundation
import Subscriptions

/// A pot of credits of one meter with a validity window; its balance is the sum of its ledger entries.
public struct CreditBucket: Hashable, Sendable {
    /// What a bucket holds.
    public enum Kind: Hashable, Sendable {
        /// A subscription's credit window.
        case cycle
        /// Purchased or carried-over credits; never expire.
        case topUp
        /// Today's quota.
        case daily
        /// The free tier's month.
        case free
        /// A monthly window of a grant or a one-time purchase (``SourceCredits``).
        case entitlement
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "cycle": self = .cycle
            case "topup": self = .topUp
            case "daily": self = .daily
            case "free": self = .free
            case "entitlement": self = .entitlement
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .cycle: return "cycle"
            case .topUp: return "topup"
            case .daily: return "daily"
            case .free: return "free"
            case .entitlement: return "entitlement"
            case .unknown(let text): return text
            }
        }

        /// Spending takes daily quotas first, then expiring credits by soonest end, then top-ups.
        public var spendRank: Int {
            switch self {
            case .daily: return 0
            case .topUp: return 2
            case .cycle, .free, .entitlement, .unknown: return 1
            }
        }
    }

    public var key: String
    public var meter: String
    public var kind: Kind
    /// The subscription of a cycle bucket.
    public var originalTransactionId: String?
    /// The billing period of a cycle bucket (its `webOrderLineItemId`, else `transactionId`; buckets written before
    /// billing periods were keyed hold the period's `transactionId`).
    public var billingPeriod: String?
    /// The account of a top-up, daily, free or entitlement bucket (cycle buckets follow their subscription's owner).
    public var accountId: AccountID?
    public var validFrom: Date
    public var validUntil: Date?
    /// What the period cost, in milliunits (cycle buckets).
    public var price: Int64?

    public init(
        key: String, meter: String, kind: Kind, originalTransactionId: String? = nil, billingPeriod: String? = nil,
        accountId: AccountID? = nil, validFrom: Date, validUntil: Date?, price: Int64? = nil
    ) {
        self.key = key
        self.meter = meter
        self.kind = kind
        self.originalTransactionId = originalTransactionId
        self.billingPeriod = billingPeriod
        self.accountId = accountId
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.price = price
    }

    /// The account's top-up bucket of a meter.
    public static func topUp(account: AccountID, meter: String) -> CreditBucket {
        CreditBucket(
            key: "topup:\(account.text):\(meter)", meter: meter, kind: .topUp, accountId: account,
            validFrom: Date(timeIntervalSince1970: 0), validUntil: nil)
    }

    /// Whether credits in the bucket can be spent at `now`.
    public func isLive(at now: Date) -> Bool { validFrom <= now && validUntil.map { $0 > now } ?? true }

    /// The credit window index of a cycle bucket, from its key (`…:w<k>:<meter>`, or `…:m<k>:<meter>` as written
    /// before billing periods were keyed).
    public var windowIndex: Int? {
        let parts = key.split(separator: ":")
        guard kind == .cycle || kind == .entitlement, parts.count >= 3 else { return nil }
        let window = parts[parts.count - 2]
        guard let marker = window.first, marker == "w" || marker == "m" else { return nil }
        return Int(window.dropFirst())
    }
}
