/// A charge (`ch_…`, read with `expand[]=refunds`): what was paid and what of it was refunded.
public struct StripeCharge: Codable, Sendable, Equatable {
    public var id: String
    public var amount: Int64
    public var amountRefunded: Int64
    public var currency: String
    public var paymentIntent: String?
    public var customer: String?
    public var created: Int64
    public var refunds: StripeList<Refund>?

    public struct Refund: Codable, Sendable, Equatable {
        public var id: String
        public var amount: Int64
        public var created: Int64
        public var status: String?

        public init(id: String, amount: Int64, created: Int64, status: String = "succeeded") {
            self.id = id
            self.amount = amount
            self.created = created
            self.status = status
        }
    }

    public init(
        id: String, amount: Int64, amountRefunded: Int64 = 0, currency: String, paymentIntent: String?, customer: String?, created: Int64,
        refunds: [Refund] = []
    ) {
        self.id = id
        self.amount = amount
        self.amountRefunded = amountRefunded
        self.currency = currency
        self.paymentIntent = paymentIntent
        self.customer = customer
        self.created = created
        self.refunds = StripeList(data: refunds)
    }

    enum CodingKeys: String, CodingKey {
        case id, amount, currency, customer, created, refunds
        case amountRefunded = "amount_refunded"
        case paymentIntent = "payment_intent"
    }

    /// When the newest refund was made (the charge's own time when the refunds were not read).
    public var refundedAt: Int64? {
        guard amountRefunded > 0 else { return nil }
        return refunds?.data.map(\.created).max() ?? created
    }
}
