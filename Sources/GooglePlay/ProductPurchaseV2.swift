import Foundation

/// What `purchases.productsv2.getproductpurchasev2` answers for a one-time product's purchase token (androidpublisher
/// v3, `ProductPurchaseV2`, 2025-06-30): the purchase's state now. Only the fields Storekeeper derives from are read;
/// the stored read keeps the rest. It carries no price: a sale's amount is the catalogue's.
public struct ProductPurchaseV2: Decodable, Sendable, Equatable {
    /// `purchaseStateContext.purchaseState`: `PURCHASED`, `CANCELLED` (a pending purchase that never went through),
    /// `PENDING`, with `unknown` for values Google adds.
    public var purchaseState: PurchaseState
    public var orderId: String?
    /// When the purchase completed (`purchaseCompletionTime`, unset while pending).
    public var completedAt: Date?
    public var lineItems: [LineItem]
    public var acknowledgementState: String?
    public var obfuscatedExternalAccountId: String?
    /// `testPurchaseContext` is present for a license tester's purchase.
    public var isTest: Bool
    public var regionCode: String?

    public enum PurchaseState: Sendable, Hashable {
        case purchased, cancelled, pending
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "PURCHASED": self = .purchased
            case "CANCELLED": self = .cancelled
            case "PENDING": self = .pending
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .purchased: return "PURCHASED"
            case .cancelled: return "CANCELLED"
            case .pending: return "PENDING"
            case .unknown(let text): return text
            }
        }
    }

    /// One `productLineItem`: the product and `productOfferDetails`' quantities.
    public struct LineItem: Decodable, Sendable, Equatable {
        public var productId: String
        public var quantity: Int64
        /// What can still be refunded: the quantity less what quantity-based partial refunds took back.
        public var refundableQuantity: Int64?
        /// `CONSUMPTION_STATE_YET_TO_BE_CONSUMED` or `CONSUMPTION_STATE_CONSUMED`.
        public var consumptionState: String?

        enum CodingKeys: String, CodingKey { case productId, productOfferDetails }
        struct OfferDetails: Decodable {
            var quantity: Int64?
            var refundableQuantity: Int64?
            var consumptionState: String?
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            productId = try container.decode(String.self, forKey: .productId)
            let details = try container.decodeIfPresent(OfferDetails.self, forKey: .productOfferDetails)
            quantity = min(max(details?.quantity ?? 1, 1), 1_000_000)
            refundableQuantity = details?.refundableQuantity.map { min(max($0, 0), 1_000_000) }
            consumptionState = details?.consumptionState
        }
    }

    enum CodingKeys: String, CodingKey {
        case purchaseStateContext, orderId, purchaseCompletionTime, productLineItem, acknowledgementState, obfuscatedExternalAccountId
        case testPurchaseContext, regionCode
    }

    struct StateContext: Decodable { var purchaseState: String? }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        purchaseState = PurchaseState(
            try container.decodeIfPresent(StateContext.self, forKey: .purchaseStateContext)?.purchaseState ?? "PURCHASE_STATE_UNSPECIFIED")
        orderId = try container.decodeIfPresent(String.self, forKey: .orderId)
        completedAt = try container.decodeIfPresent(String.self, forKey: .purchaseCompletionTime).flatMap(PubSubPush.date)
        lineItems = try container.decodeIfPresent([LineItem].self, forKey: .productLineItem) ?? []
        acknowledgementState = try container.decodeIfPresent(String.self, forKey: .acknowledgementState)
        obfuscatedExternalAccountId = try container.decodeIfPresent(String.self, forKey: .obfuscatedExternalAccountId)
        isTest = container.contains(.testPurchaseContext)
        regionCode = try container.decodeIfPresent(String.self, forKey: .regionCode)
    }
}

/// One entry of `purchases.voidedpurchases.list` (`VoidedPurchase`), or what a `voidedPurchaseNotification` said: an
/// order Google refunded or charged back — whole, or (quantity-based partial refunds) some of its quantity.
public struct VoidedPurchase: Sendable, Equatable, Decodable {
    public var purchaseToken: String
    public var orderId: String
    public var voidedAt: Date
    /// `voidedSource`: 0 user, 1 developer, 2 Google.
    public var source: Int?
    /// `voidedReason`: 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly
    /// fraud, 7 chargeback, 8 unacknowledged purchase.
    public var reason: Int?
    /// The quantity a partial refund took back; `nil` for a whole refund, or when a notification did not say.
    public var quantity: Int64?
    /// `refundType`: 1 full, 2 quantity-based partial (a notification says; the list's entries carry a quantity).
    public var isPartial: Bool

    public init(
        purchaseToken: String, orderId: String, voidedAt: Date, source: Int? = nil, reason: Int? = nil, quantity: Int64? = nil,
        isPartial: Bool = false
    ) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.voidedAt = voidedAt
        self.source = source
        self.reason = reason
        self.quantity = quantity
        self.isPartial = isPartial
    }

    enum CodingKeys: String, CodingKey { case purchaseToken, orderId, voidedTimeMillis, voidedSource, voidedReason, voidedQuantity, refundType }

    /// A list entry: times in milliseconds written as strings, as int64s are in Google's JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        purchaseToken = try container.decode(String.self, forKey: .purchaseToken)
        // A test purchase may have no order: the token stands for it, as it does for the purchase's id.
        orderId = try container.decodeIfPresent(String.self, forKey: .orderId) ?? purchaseToken
        let millis =
            try (try? container.decode(String.self, forKey: .voidedTimeMillis)).flatMap { Int64($0) }
            ?? container.decode(Int64.self, forKey: .voidedTimeMillis)
        guard (0...253_402_300_799_999).contains(millis) else {
            throw DecodingError.dataCorruptedError(forKey: .voidedTimeMillis, in: container, debugDescription: "not a time")
        }
        voidedAt = Date(timeIntervalSince1970: Double(millis) / 1000)
        source = try container.decodeIfPresent(Int.self, forKey: .voidedSource)
        reason = try container.decodeIfPresent(Int.self, forKey: .voidedReason)
        quantity = try container.decodeIfPresent(Int.self, forKey: .voidedQuantity).map { Int64(min(max($0, 0), 1_000_000)) }
        isPartial = (try container.decodeIfPresent(Int.self, forKey: .refundType)) == 2 || (quantity ?? 0) > 0
    }

    /// A page of `voidedpurchases.list`.
    public struct Page: Decodable, Sendable {
        public var voidedPurchases: [VoidedPurchase]
        public var nextPageToken: String?

        enum CodingKeys: String, CodingKey { case voidedPurchases, tokenPagination }
        struct Pagination: Decodable { var nextPageToken: String? }

        /// Entries that could not be read (no token, a time out of range), skipped: one odd entry must not stop the
        /// catch-up of every refund after it.
        public var skipped = 0

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let entries = try container.decodeIfPresent([Lenient].self, forKey: .voidedPurchases) ?? []
            voidedPurchases = entries.compactMap(\.entry)
            skipped = entries.count - voidedPurchases.count
            nextPageToken = try container.decodeIfPresent(Pagination.self, forKey: .tokenPagination)?.nextPageToken
        }

        struct Lenient: Decodable {
            var entry: VoidedPurchase?
            init(from decoder: any Decoder) throws { entry = try? VoidedPurchase(from: decoder) }
        }
    }
}
