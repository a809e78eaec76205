/// A dispute (`dp_…`) of a charge: access is suspended while it is open, and a lost one takes the period back.
public struct StripeDispute: Codable, Sendable, Equatable {
    public var id: String
    public var charge: String
    public var paymentIntent: String?
    /// `warning_needs_response`, `warning_under_review`, `warning_closed`, `needs_response`, `under_review`, `won`,
    /// `lost`.
    public var status: String
    public var amount: Int64
    public var created: Int64

    public init(id: String, charge: String, paymentIntent: String?, status: String, amount: Int64, created: Int64) {
        self.id = id
        self.charge = charge
        self.paymentIntent = paymentIntent
        self.status = status
        self.amount = amount
        self.created = created
    }

    enum CodingKeys: String, CodingKey {
        case id, charge, status, amount, created
        case paymentIntent = "payment_intent"
    }

    public var isLost: Bool { status == "lost" }
    /// Still open: neither won, lost nor closed as a warning.
    public var isOpen: Bool { !["won", "lost", "warning_closed"].contains(status) }
}
