/// A Checkout Session (`cs_…`): who bought (`client_reference_id`), and the subscription or payment it made.
public struct StripeCheckoutSession: Codable, Sendable, Equatable {
    public var id: String
    /// `subscription`, `payment`, `setup`.
    public var mode: String
    /// `open`, `complete`, `expired`.
    public var status: String?
    /// `paid`, `unpaid`, `no_payment_required`.
    public var paymentStatus: String?
    public var clientReferenceId: String?
    public var customer: String?
    public var subscription: String?
    public var paymentIntent: String?
    public var metadata: [String: String]?
    public var url: String?
    public var livemode: Bool?
    public var created: Int64?
    /// Unix seconds: an open session can be paid until then (24 hours by default).
    public var expiresAt: Int64?
    /// Read with `expand[]=line_items`.
    public var lineItems: StripeList<LineItem>?

    public struct LineItem: Codable, Sendable, Equatable {
        public var id: String
        public var price: StripePrice?
        public var quantity: Int64?
    }

    enum CodingKeys: String, CodingKey {
        case id, mode, status, customer, subscription, metadata, url, livemode, created
        case paymentStatus = "payment_status"
        case clientReferenceId = "client_reference_id"
        case paymentIntent = "payment_intent"
        case lineItems = "line_items"
        case expiresAt = "expires_at"
    }
}
