/// `POST /v1/accounts/{accountId}/stripe/checkout`, 201: the hosted Checkout session (openapi `StripeSession`).
struct StripeSessionAnswer: Decodable, Sendable {
    var url: String
    var sessionId: String
}

/// `POST /v1/accounts/{accountId}/stripe/portal`: the customer portal's address (openapi `StripePortal`).
struct StripePortalAnswer: Decodable, Sendable {
    var url: String
}

/// `POST /v1/accounts/{accountId}/stripe/link`: a Stripe subscription linked to the account (openapi `StripeLink`).
struct StripeLinkAnswer: Decodable, Sendable {
    var subscriptionId: String
    var accountId: String
    var status: String?
    var productId: String?
}
