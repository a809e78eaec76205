import Credits
import Entitlements
import Foundation
import Subscriptions

/// The events of credit changes: grants posted (a billing period's window, its correction upward, a top-up bought),
/// a meter spent to zero, a consumable refunded. Keys are the ledger's own operation keys, which are posted once.
public enum CreditChanges {
    /// A `credits.granted` per grant among `operations` (window grants, upward corrections, top-up purchases).
    public static func granted(
        _ operations: [LedgerOperation], account: AccountID, subscription: String?, environment: StoreEnvironment, cause: EventCause
    ) -> [EventDraft] {
        operations.compactMap { operation in
            guard case .post(let entry, let opening) = operation, entry.delta > 0,
                entry.isGrant || entry.operationKey.hasPrefix("topup:") || entry.operationKey.hasPrefix("adjust:")
            else { return nil }
            let meter = opening?.meter ?? entry.bucket.split(separator: ":").last.map(String.init)
            return EventDraft(
                type: .creditsGranted, key: "granted:\(entry.operationKey)", account: account, subscription: subscription,
                environment: environment, change: EventChange(meter: meter, amount: entry.delta, bucket: entry.bucket), cause: cause)
        }
    }

    /// `credits.depleted` when a spend left nothing of `meter`; `spendKey` names the spend, and is made only for the one
    /// that took the last credit.
    public static func depleted(
        meter: String, remaining: Int64?, account: AccountID, spendKey: @autoclosure () -> String, environment: StoreEnvironment
    ) -> [EventDraft] {
        guard remaining == 0 else { return [] }
        return [
            EventDraft(
                type: .creditsDepleted, key: "depleted:\(spendKey())", account: account, subscription: nil, environment: environment,
                change: EventChange(meter: meter), cause: EventCause())
        ]
    }

    /// `credits.low` (or `credits.exhausted` at 0) for each `warn_at` threshold of `meter` that a spend or a hold took
    /// the remaining balance across, once per credit window: the key names the window by when it resets (`open` for
    /// a meter that never resets, such as top-ups only, which is then told once).
    public static func warnings(
        _ crossings: [CreditWarnings.Crossing], meter: String, remaining: Int64, window resetsAt: Date?, account: AccountID,
        environment: StoreEnvironment
    ) -> [EventDraft] {
        let window = resetsAt.map { String(Int64($0.timeIntervalSince1970.rounded(.down))) } ?? "open"
        return crossings.map { crossing in
            EventDraft(
                type: crossing.exhausted ? .creditsExhausted : .creditsLow,
                key: "\(crossing.exhausted ? "exhausted" : "low"):\(account.text):\(meter):\(crossing.credits):\(window)", account: account,
                subscription: nil, environment: environment, change: EventChange(meter: meter, remaining: remaining, threshold: crossing.credits),
                cause: EventCause())
        }
    }

    /// `purchase.consumable_refunded` for a consumable Apple says was refunded.
    public static func consumableRefunded(
        transactionId: String, productId: String, reason: String?, account: AccountID, environment: StoreEnvironment, cause: EventCause
    ) -> EventDraft {
        EventDraft(
            type: .purchaseConsumableRefunded, key: "consumable_refunded:\(transactionId)", account: account, subscription: nil,
            environment: environment, change: EventChange(reason: reason, productId: productId, transactionId: transactionId), cause: cause)
    }

    /// `purchase.refund_requested`: Apple's `CONSUMPTION_REQUEST` about `transactionId`.
    public static func refundRequested(
        requestId: UUID, transactionId: String, productId: String, reason: String?, account: AccountID, subscription: String?,
        environment: StoreEnvironment, answerBy: Date, deadline: Date, cause: EventCause
    ) -> EventDraft {
        EventDraft(
            type: .purchaseRefundRequested, key: "refund_requested:\(requestId.lowercasedText)", account: account,
            subscription: subscription, environment: environment,
            change: EventChange(
                reason: reason, productId: productId, transactionId: transactionId, refundRequestId: requestId.lowercasedText,
                answerBy: answerBy, deadline: deadline),
            cause: cause)
    }
}
