import Foundation

/// One read of a one-time product's purchase token from `purchases.productsv2`, and when it was made.
public struct PlayProductRead: Sendable, Equatable {
    public var purchaseToken: String
    public var readAt: Date
    public var purchase: ProductPurchaseV2

    public init(purchaseToken: String, readAt: Date, purchase: ProductPurchaseV2) {
        self.purchaseToken = purchaseToken
        self.readAt = readAt
        self.purchase = purchase
    }
}

/// A one-time product bought on Play — a lifetime unlock, a pass or a top-up — as its newest read and the voided
/// orders Google reported say: a pure function of them, whatever order they came in.
public struct PlayProductPurchase: Sendable, Equatable {
    public var purchaseToken: String
    /// The purchase's id in Storekeeper (its entitlement record, its top-up's ledger rows, its sale): the `GPA.` order
    /// id, else the token (a purchase without an order, as some test purchases are).
    public var id: String
    public var orderId: String?
    public var productId: String
    public var quantity: Int64
    /// How much of the quantity Google refunded: all of it after a full refund, the partial refunds' share otherwise.
    public var voidedQuantity: Int64
    /// When the newest refund of it was made.
    public var voidedAt: Date?
    public var purchasedAt: Date
    public var isTest: Bool
    public var accountToken: String?
    /// Granted and not acknowledged yet.
    public var awaitsAcknowledgement: Bool
    /// Consumed already (a top-up Storekeeper, or the app, consumed).
    public var isConsumed: Bool
    /// When the newest read was asked for.
    public var observedAt: Date

    /// Whether every unit was refunded: the purchase is taken back.
    public var isVoided: Bool { voidedQuantity >= quantity }

    /// The purchase as `read` and `voided` (the voided entries of its token) say; `nil` while it is pending or was
    /// never completed (nothing to grant). `purchased`: the newest read that said `PURCHASED`, which decides when a
    /// later read says otherwise (Google does not document what a refunded purchase reads as; what was granted stays
    /// known, and the refunds recorded take it back).
    public init?(_ newest: PlayProductRead, purchased: PlayProductRead? = nil, voided: [VoidedPurchase]) {
        let read = newest.purchase.purchaseState == .purchased ? newest : purchased ?? newest
        let purchase = read.purchase
        guard purchase.purchaseState == .purchased, var line = purchase.lineItems.first else { return nil }
        // What is still refundable only goes down: the newest read's word, when it says one for the same product.
        if let later = newest.purchase.lineItems.first(where: { $0.productId == line.productId })?.refundableQuantity {
            line.refundableQuantity = min(line.refundableQuantity ?? later, later)
        }
        purchaseToken = read.purchaseToken
        orderId = purchase.orderId
        id = purchase.orderId ?? read.purchaseToken
        productId = line.productId
        quantity = line.quantity
        // A refund naming no order (its token stands for it) is the token's purchase's.
        let own = voided.filter {
            $0.purchaseToken == read.purchaseToken && (purchase.orderId == nil || $0.orderId == purchase.orderId || $0.orderId == read.purchaseToken)
        }
        // Two measures of the same refunds — the partial entries' quantities, and what the read says is no longer
        // refundable — so the larger counts (a notification of a partial refund says no quantity; the hourly list
        // may not have it yet). A full refund takes what is left.
        let listed = own.filter(\.isPartial).reduce(Int64(0)) { $0 + ($1.quantity ?? 0) }
        let unrefundable = line.refundableQuantity.map { line.quantity - $0 } ?? 0
        let partial = min(max(listed, own.contains(where: \.isPartial) ? unrefundable : 0), line.quantity)
        voidedQuantity = own.contains(where: { !$0.isPartial }) ? line.quantity : partial
        voidedAt = own.map(\.voidedAt).max()
        purchasedAt = purchase.completedAt ?? read.readAt
        isTest = purchase.isTest
        accountToken = purchase.obfuscatedExternalAccountId
        awaitsAcknowledgement = purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING"
        isConsumed = line.consumptionState == "CONSUMPTION_STATE_CONSUMED"
        observedAt = max(read.readAt, newest.readAt)
    }
}
