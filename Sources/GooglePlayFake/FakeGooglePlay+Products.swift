import Foundation
import Hummingbird

/// Play's one-time products, refunds and chargeback reviews as the fake holds them: purchases served by
/// `purchases.productsv2` and finished by `products.acknowledge`/`consume`; refunds listed by
/// `purchases.voidedpurchases` and published as `voidedPurchaseNotification`; chargebacks published as
/// `pendingRefundReviewNotification` and answered through `orders.reviewrefund`.
extension FakeGooglePlay {
    /// One purchase token of a one-time product.
    struct ProductToken: Sendable {
        var productId: String
        var orderId: String
        var quantity: Int
        var refundableQuantity: Int
        var purchaseTime: Date
        var accountToken: String?
        var acknowledged = false
        var consumed = false
        /// Bought with a slow form of payment not completed yet (`PENDING`).
        var pending = false
    }

    /// One entry of `voidedpurchases.list`.
    struct VoidedEntry: Sendable {
        var purchaseToken: String
        var orderId: String
        var purchaseTime: Date
        var voidedTime: Date
        var quantity: Int?
    }

    /// A one-time product bought: a fresh token and order, not acknowledged (`ONE_TIME_PRODUCT_PURCHASED`, 1).
    /// `pending`: paid with a slow form of payment (cash at a shop) not completed yet; ``completePayment(_:at:)``.
    public func buyProduct(
        _ productId: String, quantity: Int = 1, accountToken: String?, pending: Bool = false, at now: Date
    ) -> (token: String, notification: [String: Any]) {
        let (token, _) = state.withLock { state -> (String, String) in
            state.nextToken += 1
            state.nextOrder += 1
            let token = "fake-play-product-\(state.nextToken)-\(runId)-" + String(repeating: "y", count: 72)
            let order = String(format: "GPA.3377-%04d-%04d-%05d", state.nextOrder % 10_000, runNumber % 10_000, state.nextOrder)
            state.products[token] = ProductToken(
                productId: productId, orderId: order, quantity: quantity, refundableQuantity: quantity, purchaseTime: now, accountToken: accountToken,
                pending: pending)
            return (token, order)
        }
        return (token, productNotification(token, productId: productId, type: 1, at: now))
    }

    /// A pending purchase's payment completes: it reads `PURCHASED` (`ONE_TIME_PRODUCT_PURCHASED`).
    public func completePayment(_ token: String, at now: Date) throws -> [String: Any] {
        try state.withLock { state in
            guard var product = state.products[token], product.pending else { throw UnknownToken(token: token) }
            product.pending = false
            state.products[token] = product
            return productNotification(token, productId: product.productId, type: 1, at: now)
        }
    }

    /// The app consumed the purchase itself (the Play Billing Library's `consumeAsync`), before Storekeeper did.
    public func consumeInApp(_ token: String) {
        state.withLock { state in state.products[token]?.consumed = true }
    }

    /// The order id of a one-time purchase.
    public func order(ofProduct token: String) -> String? { state.withLock { $0.products[token]?.orderId } }

    /// The order ids of a subscription token, oldest first (`GPA.…`, then `..0`, `..1` for renewals).
    public func orders(ofSubscription token: String) -> [String] {
        state.withLock { state in
            guard let subscription = state.subscriptions[token] else { return [] }
            return [subscription.orderBase] + (0..<max(subscription.renewals, 0)).map { "\(subscription.orderBase)..\($0)" }
        }
    }

    /// Google refunds and revokes an order (a subscription's period, or a one-time purchase — `quantity` of its units
    /// for a quantity-based partial refund): the order is listed as voided and `voidedPurchaseNotification` published.
    /// Only revoked orders are voided ("only revoked orders will be shown in the Voided Purchases API. If a developer
    /// refunds a purchase without setting the revoke option, the order will not be returned"), and revoking a
    /// subscription's order ends the subscription now ("access to the subscription … will be terminated immediately",
    /// `orders.refund`'s `revoke`): the read says `EXPIRED`. Only the voided notification is sent; whether Play also
    /// sends `SUBSCRIPTION_REVOKED` is not documented, and `revoke` sends that one.
    public func refund(order orderId: String, quantity: Int? = nil, at now: Date) throws -> (token: String, notification: [String: Any]) {
        try state.withLock { state in
            if let (token, product) = state.products.first(where: { $0.value.orderId == orderId }) {
                guard product.refundableQuantity > 0 else { throw ControlRefusal("order \(orderId) is refunded already") }
                let units = min(quantity ?? product.refundableQuantity, product.refundableQuantity)
                guard units > 0 else { throw ControlRefusal("quantity must be at least 1") }
                state.products[token]!.refundableQuantity -= units
                let whole = state.products[token]!.refundableQuantity == 0
                state.voided.append(
                    VoidedEntry(
                        purchaseToken: token, orderId: orderId, purchaseTime: product.purchaseTime, voidedTime: now,
                        quantity: whole && units == product.quantity ? nil : units))
                return (token, voidedNotification(token, orderId: orderId, productType: 2, partial: !whole, at: now))
            }
            for (token, subscription) in state.subscriptions {
                let orders = [subscription.orderBase] + (0..<max(subscription.renewals, 0)).map { "\(subscription.orderBase)..\($0)" }
                guard orders.contains(orderId) else { continue }
                guard !state.voided.contains(where: { $0.orderId == orderId }) else { throw ControlRefusal("order \(orderId) is refunded already") }
                state.voided.append(
                    VoidedEntry(purchaseToken: token, orderId: orderId, purchaseTime: subscription.startTime, voidedTime: now, quantity: nil))
                state.subscriptions[token]?.endNow(now)
                return (token, voidedNotification(token, orderId: orderId, productType: 1, partial: false, at: now))
            }
            throw ControlRefusal("the fake sold no order \(orderId)")
        }
    }

    /// A chargeback Google asks the developer to review (`pendingRefundReviewNotification`, reason 7 chargeback).
    public func chargeback(order orderId: String, at now: Date) throws -> (token: String, notification: [String: Any]) {
        let token = try state.withLock { state -> String in
            let sold =
                state.products.values.contains { $0.orderId == orderId }
                || state.subscriptions.values.contains { orderId == $0.orderBase || orderId.hasPrefix($0.orderBase + "..") }
            guard sold else { throw ControlRefusal("the fake sold no order \(orderId)") }
            let token = "fake-refund-review-\(UUID().uuidString.lowercased())"
            state.pendingReviews[orderId] = token
            return token
        }
        return (
            token,
            [
                "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(now.timeIntervalSince1970 * 1000)),
                "pendingRefundReviewNotification": ["version": "1.0", "pendingRefundToken": token, "orderId": orderId, "refundReason": 7]
                    as [String: Any],
            ]
        )
    }

    /// The `orders.reviewrefund` bodies received so far, each with its `orderId`.
    public var refundReviews: [[String: Any]] {
        state.withLock { $0.reviews }.compactMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    /// Whether the product purchase was acknowledged, and consumed.
    public func productState(_ token: String) -> (acknowledged: Bool, consumed: Bool)? {
        state.withLock { state in state.products[token].map { ($0.acknowledged, $0.consumed) } }
    }

    func productNotification(_ token: String, productId: String, type: Int, at now: Date) -> [String: Any] {
        [
            "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(now.timeIntervalSince1970 * 1000)),
            "oneTimeProductNotification": ["version": "1.0", "notificationType": type, "purchaseToken": token, "sku": productId] as [String: Any],
        ]
    }

    func voidedNotification(_ token: String, orderId: String, productType: Int, partial: Bool, at now: Date) -> [String: Any] {
        [
            "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(now.timeIntervalSince1970 * 1000)),
            "voidedPurchaseNotification": ["purchaseToken": token, "orderId": orderId, "productType": productType, "refundType": partial ? 2 : 1]
                as [String: Any],
        ]
    }

    /// The purchase as `purchases.productsv2.getproductpurchasev2` answers it (`ProductPurchaseV2`).
    func productPurchaseV2(_ product: ProductToken) -> [String: Any] {
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var purchase: [String: Any] = [
            "kind": "androidpublisher#productPurchaseV2", "regionCode": "US", "orderId": product.orderId,
            "purchaseCompletionTime": product.purchaseTime.formatted(time),
            "purchaseStateContext": ["purchaseState": product.pending ? "PENDING" : "PURCHASED"],
            "acknowledgementState": product.acknowledged || product.consumed ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            "productLineItem": [
                [
                    "productId": product.productId,
                    "productOfferDetails": [
                        "quantity": product.quantity, "refundableQuantity": product.refundableQuantity,
                        "consumptionState": product.consumed ? "CONSUMPTION_STATE_CONSUMED" : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED",
                        "purchaseOptionId": "buy",
                    ] as [String: Any],
                ] as [String: Any]
            ],
        ]
        if let account = product.accountToken { purchase["obfuscatedExternalAccountId"] = account }
        if testPurchases { purchase["testPurchaseContext"] = ["fopType": "TEST"] }
        return purchase
    }

    /// `products.acknowledge` or `products.consume`: the token's product must be `productId`. Consuming twice is
    /// refused, as Google refuses it.
    func finishProduct(_ token: String, productId: String, consuming: Bool) -> Response {
        state.withLock { state in
            guard var product = state.products[token], product.productId == productId else {
                return Self.error(404, "NOT_FOUND", "The purchase token was not found.")
            }
            if consuming {
                guard !product.consumed else { return Self.error(400, "FAILED_PRECONDITION", "The purchase is already consumed.") }
                product.consumed = true
            } else {
                product.acknowledged = true
            }
            state.products[token] = product
            state.acknowledgements[token, default: 0] += 1
            return Self.json([])
        }
    }

    /// `voidedpurchases.list`: entries voided from `startTime` (at most 30 days back), `maxResults` a page, paged by
    /// `token` (the entry's index).
    func voidedPage(_ request: Request) -> Response {
        let query = request.uri.queryParameters
        guard let start = query["startTime"].flatMap({ Int64(String($0)) }) else {
            return Self.error(400, "INVALID_ARGUMENT", "startTime is required")
        }
        guard Double(start) / 1000 >= Date().timeIntervalSince1970 - 30 * 86_400 else {
            return Self.error(400, "INVALID_ARGUMENT", "startTime can be at most 30 days in the past")
        }
        let pageSize = min(max(query["maxResults"].flatMap { Int(String($0)) } ?? 1000, 1), 1000)
        let from = query["token"].flatMap { Int(String($0)) } ?? 0
        let partial = query["includeQuantityBasedPartialRefund"] == "true"
        let entries = state.withLock { state in
            state.voided.filter { $0.voidedTime.timeIntervalSince1970 * 1000 >= Double(start) && (partial || $0.quantity == nil) }
        }
        let page = entries.dropFirst(from).prefix(pageSize)
        var answer: [String: Any] = [
            "voidedPurchases": page.map { entry -> [String: Any] in
                var item: [String: Any] = [
                    "kind": "androidpublisher#voidedPurchase", "purchaseToken": entry.purchaseToken, "orderId": entry.orderId,
                    "purchaseTimeMillis": String(Int64(entry.purchaseTime.timeIntervalSince1970 * 1000)),
                    "voidedTimeMillis": String(Int64(entry.voidedTime.timeIntervalSince1970 * 1000)), "voidedSource": 1, "voidedReason": 1,
                ]
                if let quantity = entry.quantity { item["voidedQuantity"] = quantity }
                return item
            }
        ]
        if from + page.count < entries.count { answer["tokenPagination"] = ["nextPageToken": String(from + page.count)] }
        return Self.json(Array((try? JSONSerialization.data(withJSONObject: answer, options: .sortedKeys)) ?? Data()))
    }

    /// `orders.reviewrefund`: the body must carry the order's pending token, a known preference, a percentage in
    /// 0–100,000 milliunits and at most 1,000 usage events.
    func reviewRefund(order orderId: String, body: [String: Any]) -> Response {
        var received = body
        received["orderId"] = orderId
        let stored = (try? JSONSerialization.data(withJSONObject: received, options: .sortedKeys)) ?? Data()
        return state.withLock { state in
            guard let expected = state.pendingReviews[orderId] else { return Self.error(404, "NOT_FOUND", "No pending refund review for the order.") }
            guard body["pendingRefundToken"] as? String == expected else {
                return Self.error(400, "INVALID_ARGUMENT", "pendingRefundToken does not match.")
            }
            guard let preference = body["refundPreference"] as? String, ["APPROVE", "DECLINE", "NEUTRAL"].contains(preference) else {
                return Self.error(400, "INVALID_ARGUMENT", "refundPreference must be APPROVE, DECLINE or NEUTRAL.")
            }
            if let percentage = body["consumptionPercentageMilliunits"] as? Int, !(0...100_000).contains(percentage) {
                return Self.error(400, "INVALID_ARGUMENT", "consumptionPercentageMilliunits must be 0 to 100000.")
            }
            if let events = body["consumptionUsageEvents"] as? [Any], events.count > 1000 {
                return Self.error(400, "INVALID_ARGUMENT", "consumptionUsageEvents holds more than 1000 events.")
            }
            state.reviews.append(stored)
            state.pendingReviews[orderId] = nil
            return Self.json(Array("{}".utf8))
        }
    }
}
