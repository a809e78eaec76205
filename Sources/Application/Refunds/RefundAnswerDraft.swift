import AppStoreModels
import Credits
import Persistence
import PostgresNIO

/// What Storekeeper answers a refund request, read from the ledger as it stands: the share of the purchase used, the
/// answer (the app's own if it recorded one, else the policy's) and, for Play's review, the spends. The one place the
/// answer is worked out: ``ConsumptionAnswerJob`` sends it, ``RefundRequestQuery`` shows it while a request can still be answered.
struct RefundAnswerDraft: Sendable {
    var answer: ConsumptionAnswer
    var source: RefundAnswerPreview.Source
    /// The share used, in Apple's milliunits (100 000 is all of it); nil when the purchase credited nothing.
    var milliPercent: Int32?
    /// The spends Play's review carries, newest first; read only when asked for.
    var usage: [CreditLedger.UsageRecord] = []

    /// The draft for `request`; `usageLimit` reads that many of its spends as well (Play's review sends them).
    static func read(
        for request: RefundRequests.Request, credits: CreditLedger, policy: RefundPolicy, usageLimit: Int? = nil, on connection: PostgresConnection
    ) async throws -> RefundAnswerDraft {
        // A Play purchase's id is its order's; a top-up's ledger rows are keyed by it (the App Store's by the transaction).
        let purchaseId = request.store == .googlePlay ? request.originalTransactionId : request.transactionId
        let topUp = request.purchase == .consumable ? try await credits.topUpRows(of: purchaseId, on: connection) : nil
        let consumption =
            if let topUp {
                topUp.consumption
            } else {
                try await credits.consumption(ofSubscription: request.originalTransactionId, period: request.billingPeriod, on: connection)
            }
        var draft = RefundAnswerDraft(
            answer: request.appAnswer ?? policy.answer(for: request.purchase, consumption: consumption),
            source: request.appAnswer == nil ? .policy : .app, milliPercent: consumption.delivered ? consumption.milliPercent : nil)
        if let usageLimit {
            draft.usage =
                if let topUp {
                    topUp.usage(limit: usageLimit)
                } else {
                    try await credits.usage(
                        ofSubscription: request.originalTransactionId, period: request.billingPeriod, limit: usageLimit, on: connection)
                }
        }
        return draft
    }
}
