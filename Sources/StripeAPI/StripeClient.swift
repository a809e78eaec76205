import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import StripeStore

/// Stripe's API as Storekeeper uses it: reads of the objects events name, the list of subscriptions for a catch-up,
/// and the Checkout and billing-portal sessions the web app needs. Every request carries the pinned `Stripe-Version`
/// (so the objects have the shape ``StripeStore`` reads), a timeout, and is retried on 429 (after `Retry-After`), 5xx
/// and transport failures with backoff; writes carry an `Idempotency-Key`, so a retried write is done once.
public struct StripeClient: Sendable {
    /// The API version every request pins: items carry their billing period, invoices their `parent` and `payments`.
    public static let apiVersion = "2025-03-31.basil"
    public static let defaultBaseURL = "https://api.stripe.com"

    let apiKey: String
    let baseURL: String
    let httpClient: HTTPClient
    let timeout: TimeAmount
    let retryDelays: [Duration]
    let limiter: StripeRateLimiter?
    let logger: Logger

    /// - Parameters:
    ///   - baseURL: Stripe's API host, or a test or staging server (`STOREKEEPER_STRIPE_BASE_URL`).
    ///   - retryDelays: the waits before each retry; a `Retry-After` up to a minute replaces the wait.
    ///   - limiter: paces every request, retries too (`STOREKEEPER_STRIPE_REQUESTS_PER_SECOND`); `nil`: unpaced.
    public init(
        apiKey: String, baseURL: String = Self.defaultBaseURL, httpClient: HTTPClient = .shared, timeout: TimeAmount = .seconds(20),
        retryDelays: [Duration] = [.milliseconds(500), .seconds(2), .seconds(8)], limiter: StripeRateLimiter? = nil, logger: Logger
    ) {
        self.limiter = limiter
        self.apiKey = apiKey
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.httpClient = httpClient
        self.timeout = timeout
        self.retryDelays = retryDelays
        self.logger = logger
    }

    public func subscription(_ id: String) async throws(StripeAPIError) -> StripeSubscription {
        try await send(.GET, "/v1/subscriptions/\(Self.escape(id))", operation: "subscription")
    }

    /// Every invoice of a subscription, with the payments that paid them.
    public func invoices(ofSubscription id: String) async throws(StripeAPIError) -> [StripeInvoice] {
        var invoices: [StripeInvoice] = []
        var after: String?
        repeat {
            var query = StripeForm([("subscription", id), ("limit", "100"), ("expand[]", "data.payments")])
            query.append("starting_after", after)
            let page: StripeList<StripeInvoice> = try await send(.GET, "/v1/invoices", query: query, operation: "invoices")
            invoices += page.data
            after = page.hasMore ? page.data.last?.id : nil
        } while after != nil
        return invoices
    }

    public func invoice(_ id: String) async throws(StripeAPIError) -> StripeInvoice {
        try await send(.GET, "/v1/invoices/\(Self.escape(id))", query: StripeForm([("expand[]", "payments")]), operation: "invoice")
    }

    /// The invoices a PaymentIntent paid (since `2025-03-31.basil` a charge no longer names its invoice).
    public func invoiceIds(paidBy paymentIntent: String) async throws(StripeAPIError) -> [String] {
        let query = StripeForm([("payment[type]", "payment_intent"), ("payment[payment_intent]", paymentIntent), ("limit", "100")])
        let page: StripeList<InvoicePayment> = try await send(.GET, "/v1/invoice_payments", query: query, operation: "invoice_payments")
        return page.data.compactMap(\.invoice)
    }

    public func charge(_ id: String) async throws(StripeAPIError) -> StripeCharge {
        try await send(.GET, "/v1/charges/\(Self.escape(id))", query: StripeForm([("expand[]", "refunds")]), operation: "charge")
    }

    /// The charges of a PaymentIntent (with their refunds).
    public func charges(paymentIntent: String) async throws(StripeAPIError) -> [StripeCharge] {
        let query = StripeForm([("payment_intent", paymentIntent), ("limit", "100"), ("expand[]", "data.refunds")])
        let page: StripeList<StripeCharge> = try await send(.GET, "/v1/charges", query: query, operation: "charges")
        return page.data
    }

    public func dispute(_ id: String) async throws(StripeAPIError) -> StripeDispute {
        try await send(.GET, "/v1/disputes/\(Self.escape(id))", operation: "dispute")
    }

    public func checkoutSession(_ id: String) async throws(StripeAPIError) -> StripeCheckoutSession {
        try await send(
            .GET, "/v1/checkout/sessions/\(Self.escape(id))", query: StripeForm([("expand[]", "line_items")]), operation: "checkout_session")
    }

    /// One page of subscriptions of every status, oldest id last as Stripe lists them; `createdSince` filters by
    /// creation (Unix seconds).
    public func subscriptions(startingAfter: String?, createdSince: Int64?) async throws(StripeAPIError) -> StripeList<StripeSubscription> {
        var query = StripeForm([("status", "all"), ("limit", "100")])
        query.append("starting_after", startingAfter)
        query.append("created[gte]", createdSince.map(String.init))
        return try await send(.GET, "/v1/subscriptions", query: query, operation: "subscriptions")
    }

    /// Creates a Checkout Session (`POST /v1/checkout/sessions`).
    public func createCheckoutSession(_ form: StripeForm, idempotencyKey: String) async throws(StripeAPIError) -> StripeCheckoutSession {
        try await send(.POST, "/v1/checkout/sessions", body: form, idempotencyKey: idempotencyKey, operation: "create_checkout_session")
    }

    /// Creates a billing-portal session for `customer`; returns its URL.
    public func createPortalSession(customer: String, returnURL: String, idempotencyKey: String) async throws(StripeAPIError) -> String {
        let session: PortalSession = try await send(
            .POST, "/v1/billing_portal/sessions", body: StripeForm([("customer", customer), ("return_url", returnURL)]),
            idempotencyKey: idempotencyKey, operation: "create_portal_session")
        return session.url
    }

    struct InvoicePayment: Codable, Sendable, Equatable { var invoice: String? }
    struct PortalSession: Codable, Sendable, Equatable { var url: String }

    static func escape(_ id: String) -> String { StripeForm.escape(id) }
}
