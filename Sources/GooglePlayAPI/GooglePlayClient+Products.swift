import Foundation
import GooglePlay

/// One-time products, refunds and refund reviews through the Play Developer API.
extension GooglePlayClient {
    /// `purchases.productsv2.getproductpurchasev2`: a one-time product's purchase now, and the answer's bytes.
    public func productPurchase(_ purchaseToken: String) async throws(GooglePlayAPIError) -> (purchase: ProductPurchaseV2, body: [UInt8]) {
        let body = try await send(.GET, "purchases/productsv2/tokens/\(Self.pathComponent(purchaseToken))", operation: "productsv2.get")
        do {
            return (try JSONDecoder().decode(ProductPurchaseV2.self, from: Data(body)), body)
        } catch {
            throw GooglePlayAPIError(.invalidResponse, "productsv2.get: the answer is not a ProductPurchaseV2 (\(error))")
        }
    }

    /// `purchases.products.acknowledge` (a lifetime unlock, a pass) or `purchases.products.consume` (a top-up: consuming
    /// acknowledges it too, and lets the customer buy it again).
    public func finish(product productId: String, token purchaseToken: String, consuming: Bool) async throws(GooglePlayAPIError) {
        let method = consuming ? "consume" : "acknowledge"
        _ = try await send(
            .POST, "purchases/products/\(Self.pathComponent(productId))/tokens/\(Self.pathComponent(purchaseToken)):\(method)",
            body: consuming ? nil : Array("{}".utf8), operation: "products.\(method)")
    }

    /// One page of `purchases.voidedpurchases.list` from `start` (Google keeps 30 days): subscriptions' orders too
    /// (`type=1`), and quantity-based partial refunds.
    public func voidedPurchases(since start: Date, pageToken: String?) async throws(GooglePlayAPIError) -> VoidedPurchase.Page {
        var query = "startTime=\(Int64(start.timeIntervalSince1970 * 1000))&type=1&includeQuantityBasedPartialRefund=true&maxResults=1000"
        if let pageToken { query += "&token=\(Self.pathComponent(pageToken))" }
        let body = try await send(.GET, "purchases/voidedpurchases?\(query)", operation: "voidedpurchases.list")
        do {
            return try JSONDecoder().decode(VoidedPurchase.Page.self, from: Data(body))
        } catch {
            throw GooglePlayAPIError(.invalidResponse, "voidedpurchases.list: the answer is not a VoidedPurchasesListResponse (\(error))")
        }
    }

    /// `orders.reviewrefund`: the developer's view of a chargeback under review (`OrdersReviewRefundRequest`).
    public func reviewRefund(order orderId: String, _ review: RefundReview) async throws(GooglePlayAPIError) {
        let body: [UInt8]
        do { body = Array(try JSONEncoder().encode(review)) } catch { throw GooglePlayAPIError(.refused, "reviewrefund: \(error)") }
        _ = try await send(.POST, "orders/\(Self.pathComponent(orderId)):reviewrefund", body: body, operation: "orders.reviewrefund")
    }
}

/// The body of `orders.reviewrefund` (`OrdersReviewRefundRequest`).
public struct RefundReview: Codable, Sendable, Equatable {
    public var pendingRefundToken: String
    /// `APPROVE`, `DECLINE` or `NEUTRAL`.
    public var refundPreference: String
    public var sampleContentProvided: Bool
    /// How much of the purchase was used, in milliunits of a percent (0–100,000).
    public var consumptionPercentageMilliunits: Int32?
    /// At most 1,000.
    public var consumptionUsageEvents: [UsageEvent]

    /// One time the customer used what was bought (`ConsumptionUsageEvent`).
    public struct UsageEvent: Codable, Sendable, Equatable {
        /// RFC 3339.
        public var consumptionTime: String
        public var consumptionItemDescription: String?
        public var obfuscatedAccountId: String?

        public init(consumptionTime: String, consumptionItemDescription: String?, obfuscatedAccountId: String?) {
            self.consumptionTime = consumptionTime
            self.consumptionItemDescription = consumptionItemDescription
            self.obfuscatedAccountId = obfuscatedAccountId
        }
    }

    /// Google refuses a list of more than 1,000 events.
    public static let maximumUsageEvents = 1000

    public init(
        pendingRefundToken: String, refundPreference: String, sampleContentProvided: Bool, consumptionPercentageMilliunits: Int32?,
        consumptionUsageEvents: [UsageEvent]
    ) {
        self.pendingRefundToken = pendingRefundToken
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
        self.consumptionUsageEvents = Array(consumptionUsageEvents.prefix(Self.maximumUsageEvents))
    }
}
