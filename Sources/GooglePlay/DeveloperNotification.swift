import Foundation
import PayloadDecoding

/// What Google Play publishes to the topic named in Play Console (Real-time developer notifications reference): a
/// `DeveloperNotification` with exactly one of its kinds. Nothing in it is signed; it says which purchase token
/// changed, and the token's state is then read from the Play Developer API.
public struct DeveloperNotification: Sendable, Equatable {
    public var version: String?
    public var packageName: String
    /// `eventTimeMillis` (a string of milliseconds in Google's examples; a number is read too).
    public var eventTime: Date?
    public var content: Content

    /// The one kind of change a notification carries.
    public enum Content: Sendable, Equatable {
        case subscription(type: SubscriptionNotificationType, purchaseToken: String)
        case oneTimeProduct(type: OneTimeProductNotificationType, purchaseToken: String, productId: String?)
        /// `productType` 1 subscription, 2 one-time; `refundType` 1 full, 2 quantity-based partial.
        case voidedPurchase(purchaseToken: String, orderId: String?, productType: Int?, refundType: Int?)
        /// A chargeback Google asks the developer to review within 24 hours (July 2026): `orders.reviewrefund` on the
        /// order, passing the review's token. `refundReason` is Google's number for it (chargebacks only, so far).
        case pendingRefundReview(reviewToken: String, orderId: String, refundReason: Int?)
        /// Sent from Play Console's "Send test notification".
        case test
        /// None of the kinds above: one Google added since (as it added `pendingRefundReviewNotification` in 2026).
        /// Stored and acknowledged, never refused — Pub/Sub would send a refused one again for days.
        case unknown
    }

    /// The purchase token the notification is about, if any.
    public var purchaseToken: String? {
        switch content {
        case .subscription(_, let token), .oneTimeProduct(_, let token, _), .voidedPurchase(let token, _, _, _): return token
        case .pendingRefundReview, .test, .unknown: return nil
        }
    }

    /// The kind's name as stored (`subscription`, `one_time_product`, `voided_purchase`, `pending_refund_review`, `test`).
    public var kind: String {
        switch content {
        case .subscription: return "subscription"
        case .oneTimeProduct: return "one_time_product"
        case .voidedPurchase: return "voided_purchase"
        case .pendingRefundReview: return "pending_refund_review"
        case .test: return "test"
        case .unknown: return "unknown"
        }
    }

    /// A stored notification's name as the RTDN reference writes it, from its stored kind and numbered type:
    /// `SUBSCRIPTION_RENEWED`, `ONE_TIME_PRODUCT_PURCHASED`, `VOIDED_PURCHASE`, `PENDING_REFUND_REVIEW`, `TEST`.
    public static func name(kind: String, type: Int?) -> String {
        switch (kind, type) {
        case ("subscription", let type?): return SubscriptionNotificationType(rawValue: type).name
        case ("one_time_product", let type?): return OneTimeProductNotificationType(rawValue: type).name
        default: return kind.uppercased()
        }
    }

    /// The numbered type within the kind, for subscription and one-time notifications.
    public var notificationType: Int? {
        switch content {
        case .subscription(let type, _): return type.rawValue
        case .oneTimeProduct(let type, _, _): return type.rawValue
        default: return nil
        }
    }

    /// Purchase tokens Google issues are a few hundred bytes; far longer is not a token.
    public static let maximumTokenBytes = 2048

    /// Reads a decoded `message.data`; anything that is not a DeveloperNotification with exactly one kind is refused.
    public init(data: [UInt8]) throws(PubSubPush.Refusal) {
        let raw: Raw
        do {
            raw = try PayloadDecoder().decode(Raw.self, from: data)
        } catch {
            throw PubSubPush.Refusal(
                #"message.data must be a Play DeveloperNotification: {"version", "packageName", "eventTimeMillis", and one of subscriptionNotification, oneTimeProductNotification, voidedPurchaseNotification, pendingRefundReviewNotification, testNotification}"#
            )
        }
        guard let packageName = raw.packageName, PubSubPush.isPrintable(packageName) else {
            throw PubSubPush.Refusal("the notification's packageName must be the app's package name")
        }
        var kinds: [Content] = []
        if let notification = raw.subscriptionNotification {
            guard let type = notification.notificationType else {
                throw PubSubPush.Refusal("subscriptionNotification.notificationType must be a number")
            }
            kinds.append(.subscription(type: SubscriptionNotificationType(rawValue: type), purchaseToken: try Self.token(notification.purchaseToken)))
        }
        if let notification = raw.oneTimeProductNotification {
            guard let type = notification.notificationType else {
                throw PubSubPush.Refusal("oneTimeProductNotification.notificationType must be a number")
            }
            kinds.append(
                .oneTimeProduct(
                    type: OneTimeProductNotificationType(rawValue: type), purchaseToken: try Self.token(notification.purchaseToken),
                    productId: try Self.identifier(notification.sku, "oneTimeProductNotification.sku")))
        }
        if let notification = raw.voidedPurchaseNotification {
            kinds.append(
                .voidedPurchase(
                    purchaseToken: try Self.token(notification.purchaseToken),
                    orderId: try Self.identifier(notification.orderId, "voidedPurchaseNotification.orderId"),
                    productType: notification.productType, refundType: notification.refundType))
        }
        if let notification = raw.pendingRefundReviewNotification {
            guard let orderId = try Self.identifier(notification.orderId, "pendingRefundReviewNotification.orderId"), !orderId.isEmpty else {
                throw PubSubPush.Refusal("pendingRefundReviewNotification.orderId must name the order")
            }
            kinds.append(
                .pendingRefundReview(
                    reviewToken: try Self.token(notification.pendingRefundToken, field: "pendingRefundReviewNotification.pendingRefundToken"),
                    orderId: orderId, refundReason: notification.refundReason))
        }
        if raw.testNotification != nil { kinds.append(.test) }
        guard kinds.count <= 1 else {
            throw PubSubPush.Refusal("a DeveloperNotification carries one of its kinds; this one has \(kinds.count)")
        }
        let content = kinds.first ?? .unknown
        self.version = raw.version
        self.packageName = packageName
        self.eventTime = raw.eventTimeMillis?.milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        self.content = content
    }

    /// The `packageName` of a notification, read leniently: whose it is decides whether it is read at all, so a
    /// notification of another app is acknowledged whatever else it holds.
    public static func packageName(in data: [UInt8]) -> String? {
        struct Peek: Decodable { var packageName: String? }
        return (try? PayloadDecoder().decode(Peek.self, from: data))?.packageName
    }

    private static func token(_ token: String?, field: String = "purchaseToken") throws(PubSubPush.Refusal) -> String {
        guard let token, !token.isEmpty, token.utf8.count <= maximumTokenBytes, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw PubSubPush.Refusal("\(field) must be 1 to \(maximumTokenBytes) printable ASCII bytes")
        }
        return token
    }

    private static func identifier(_ value: String?, _ field: String) throws(PubSubPush.Refusal) -> String? {
        guard let value else { return nil }
        guard PubSubPush.isPrintable(value) else { throw PubSubPush.Refusal("\(field) must be printable ASCII") }
        return value
    }

    private struct Raw: Decodable {
        var version: String?
        var packageName: String?
        var eventTimeMillis: Milliseconds?
        var subscriptionNotification: Subscription?
        var oneTimeProductNotification: OneTimeProduct?
        var voidedPurchaseNotification: Voided?
        var pendingRefundReviewNotification: PendingRefundReview?
        var testNotification: Test?

        struct Subscription: Decodable {
            var notificationType: Int?
            var purchaseToken: String?
        }

        struct OneTimeProduct: Decodable {
            var notificationType: Int?
            var purchaseToken: String?
            var sku: String?
        }

        struct Voided: Decodable {
            var purchaseToken: String?
            var orderId: String?
            var productType: Int?
            var refundType: Int?
        }

        /// Its fields as peers' decoders name them (`pendingRefundToken`, `orderId`, `refundReason`,
        /// `obfuscatedAccountId`/`ProfileId`); `OrdersReviewRefundRequest` documents the token as the one "included in
        /// the pending refund review notification".
        struct PendingRefundReview: Decodable {
            var pendingRefundToken: String?
            var orderId: String?
            var refundReason: Int?

            enum CodingKeys: String, CodingKey { case pendingRefundToken, orderId, refundReason }

            /// `refundReason` as a number or a numeric string (the field's type is not in the reference at hand): a
            /// review must never be refused for it — Pub/Sub would send it again until Google's 24 hours are over.
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                pendingRefundToken = try container.decodeIfPresent(String.self, forKey: .pendingRefundToken)
                orderId = try container.decodeIfPresent(String.self, forKey: .orderId)
                refundReason =
                    (try? container.decodeIfPresent(Int.self, forKey: .refundReason))
                    ?? (try? container.decodeIfPresent(String.self, forKey: .refundReason)).flatMap { $0.flatMap { Int($0) } }
            }
        }

        struct Test: Decodable {
            var version: String?
        }
    }

    /// `eventTimeMillis`: Google's examples write it as a string; a number is accepted too. A value outside years
    /// 1970–9999 is no time at all.
    private struct Milliseconds: Decodable {
        var milliseconds: Int64?

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let value = (try? container.decode(Int64.self)) ?? (try? container.decode(String.self)).flatMap { Int64($0) }
            milliseconds = value.flatMap { (0...253_402_300_799_999).contains($0) ? $0 : nil }
        }
    }
}
