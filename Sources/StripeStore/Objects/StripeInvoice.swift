/// What Storekeeper reads of an invoice (`in_…`, API version ``StripeAPIVersion/pinned``): a paid one is a paid
/// billing period of its subscription. Since `2025-03-31.basil` the subscription is under `parent`, a line's price
/// under `pricing`, and the payments (their PaymentIntents) in `payments`, read with `expand[]=payments`.
public struct StripeInvoice: Codable, Sendable, Equatable {
    public var id: String
    /// `draft`, `open`, `paid`, `uncollectible`, `void`.
    public var status: String?
    /// `subscription_create`, `subscription_cycle`, `subscription_update`, …
    public var billingReason: String?
    public var amountPaid: Int64
    public var currency: String
    public var customer: String?
    public var created: Int64
    public var parent: Parent?
    public var lines: StripeList<Line>
    public var payments: StripeList<Payment>?

    public struct Parent: Codable, Sendable, Equatable {
        public var subscriptionDetails: SubscriptionDetails?

        public struct SubscriptionDetails: Codable, Sendable, Equatable {
            public var subscription: String?
            public var metadata: [String: String]?
        }

        enum CodingKeys: String, CodingKey { case subscriptionDetails = "subscription_details" }
    }

    public struct Line: Codable, Sendable, Equatable {
        public var id: String
        public var amount: Int64
        public var period: Period
        public var pricing: Pricing?
        public var quantity: Int64?

        public struct Period: Codable, Sendable, Equatable {
            public var start: Int64
            public var end: Int64
        }

        public struct Pricing: Codable, Sendable, Equatable {
            public var priceDetails: PriceDetails?
            /// The price's amount per unit in the currency's minor unit, as a decimal string.
            public var unitAmountDecimal: String?

            public struct PriceDetails: Codable, Sendable, Equatable {
                public var price: String?
            }

            enum CodingKeys: String, CodingKey {
                case priceDetails = "price_details"
                case unitAmountDecimal = "unit_amount_decimal"
            }
        }

        public init(id: String, amount: Int64, start: Int64, end: Int64, price: String, unitAmount: Int64, quantity: Int64 = 1) {
            self.id = id
            self.amount = amount
            self.period = Period(start: start, end: end)
            self.pricing = Pricing(priceDetails: .init(price: price), unitAmountDecimal: String(unitAmount))
            self.quantity = quantity
        }

        public var priceId: String? { pricing?.priceDetails?.price }
    }

    /// An invoice payment: which PaymentIntent paid it.
    public struct Payment: Codable, Sendable, Equatable {
        public var id: String
        public var payment: Reference
        public var status: String?

        public struct Reference: Codable, Sendable, Equatable {
            public var type: String?
            public var paymentIntent: String?

            enum CodingKeys: String, CodingKey {
                case type
                case paymentIntent = "payment_intent"
            }
        }

        public init(id: String, paymentIntent: String, status: String = "paid") {
            self.id = id
            self.payment = Reference(type: "payment_intent", paymentIntent: paymentIntent)
            self.status = status
        }
    }

    public init(
        id: String, status: String, billingReason: String, amountPaid: Int64, currency: String, customer: String?, created: Int64,
        subscription: String?, lines: [Line], paymentIntents: [String]
    ) {
        self.id = id
        self.status = status
        self.billingReason = billingReason
        self.amountPaid = amountPaid
        self.currency = currency
        self.customer = customer
        self.created = created
        self.parent = subscription.map { Parent(subscriptionDetails: .init(subscription: $0, metadata: nil)) }
        self.lines = StripeList(data: lines)
        self.payments = StripeList(data: paymentIntents.enumerated().map { Payment(id: "inpay_\(id)_\($0.offset)", paymentIntent: $0.element) })
    }

    enum CodingKeys: String, CodingKey {
        case id, status, currency, customer, created, parent, lines, payments
        case billingReason = "billing_reason"
        case amountPaid = "amount_paid"
    }

    public var subscription: String? { parent?.subscriptionDetails?.subscription }
    public var isPaid: Bool { status == "paid" }
    /// The PaymentIntents that paid it.
    public var paymentIntents: [String] { payments?.data.compactMap(\.payment.paymentIntent) ?? [] }
}
