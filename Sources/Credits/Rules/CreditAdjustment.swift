import Foundation
import Subscriptions

/// An operator's adjustment of an account's credits (goodwill after an outage, taking back what was given by mistake):
/// credits added go to the account's top-up credits, which never expire; credits taken back come from them too, never
/// below zero, so an adjustment never touches a subscription's or grant's allowance. The reason is kept in the audit
/// log; the ledger says `operator adjustment`.
public enum CreditAdjustment {
    /// One adjustment: its key (the same key posts once), meter and signed amount.
    public struct Request: Sendable, Equatable {
        public var key: String
        public var meter: String
        public var amount: Int64

        public init(key: String, meter: String, amount: Int64) {
            self.key = key
            self.meter = meter
            self.amount = amount
        }
    }

    /// Why an adjustment cannot be made.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case unknownMeter(String, known: [String])
        case amount
        case notEnough(available: Int64)
        /// The key posted an adjustment of another meter or amount: a key is one adjustment's, as a spend's is.
        case keyReused

        public var description: String {
            switch self {
            case .unknownMeter(let meter, let known): "meter \(meter.prefix(64)) is not in the catalogue (meters: \(known.joined(separator: ", ")))"
            case .amount: "amount must be a whole number of credits, 1 to 1,000,000 either way, not 0"
            case .notEnough(let available): "only \(available) top-up credits are left to take back"
            case .keyReused: "idempotencyKey was used for an adjustment of another meter or amount"
            }
        }
    }

    public static let largest: Int64 = 1_000_000

    /// The ledger operation key of an adjustment: `adjust:<bytes of the account>:<account>:<key>`, scoped to its account
    /// as a spend's is. A global `adjust:<key>` let the same key sent for a second account post nothing while the
    /// answer said it had (the ledger's key was taken by the first account's adjustment).
    public static func operationKey(account: AccountID, key: String) -> String {
        "adjust:\(account.text.utf8.count):\(account.text):\(key)"
    }

    /// The operation `request` posts to `account`, or nothing when its key posted already.
    public static func operations(
        _ request: Request, account: AccountID, catalogue: TierCatalogue, ledger: LedgerSnapshot
    ) throws(Refusal) -> [LedgerOperation] {
        guard catalogue.meters.contains(where: { $0.id == request.meter }) else {
            throw .unknownMeter(request.meter, known: catalogue.meters.map(\.id))
        }
        guard request.amount != 0, request.amount.magnitude <= largest.magnitude else { throw .amount }
        let bucket = CreditBucket.topUp(account: account, meter: request.meter)
        let key = operationKey(account: account, key: request.key)
        if ledger.isPosted(key) {
            guard ledger.entries.contains(where: { $0.operationKey == key && $0.bucket == bucket.key && $0.delta == request.amount }) else {
                throw .keyReused
            }
            return []
        }
        if request.amount < 0 {
            let available = max(ledger.balance(of: bucket.key), 0)
            guard available >= -request.amount else { throw .notEnough(available: available) }
            return [.post(LedgerEntry(operationKey: key, bucket: bucket.key, delta: request.amount, reason: "operator adjustment"), opening: nil)]
        }
        return [.post(LedgerEntry(operationKey: key, bucket: bucket.key, delta: request.amount, reason: "operator adjustment"), opening: bucket)]
    }
}
