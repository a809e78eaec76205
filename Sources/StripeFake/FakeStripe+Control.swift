import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import StripeStore

/// What `storekeeper dev --fake-stripe` adds to the fake: routes that act as the customer and as Stripe's billing
/// would (`POST /_fake/…`, the fake's key required — Stripe has no such routes; a test clock is its nearest kin), and
/// the delivery of every event to a webhook endpoint as it is sent.
extension FakeStripe {
    /// The control routes: pay a Checkout Session, renew (or fail to renew) or cancel a subscription, refund the newest
    /// paid invoice of a subscription or a one-time payment. Each answers the object changed.
    func addControlRoutes(to router: Router<BasicRequestContext>) {
        router.post("/_fake/checkout/sessions/{id}/pay") { request, context in
            try await self.control(request) { now, form in
                let session = try self.completeCheckout(
                    try context.parameters.require("id"), at: now, trialDays: form.first("trial_days").flatMap(Int.init))
                return Self.json(session, "checkout.session")
            }
        }
        router.post("/_fake/subscriptions/{id}/renew") { request, context in
            try await self.control(request) { _, form in
                let id = try context.parameters.require("id")
                try self.renew(id, paying: form.first("paying") != "false")
                return try self.subscriptionJSON(id)
            }
        }
        router.post("/_fake/subscriptions/{id}/cancel") { request, context in
            try await self.control(request) { now, form in
                let id = try context.parameters.require("id")
                try self.cancel(id, at: now, atPeriodEnd: form.first("at_period_end") != "false")
                return try self.subscriptionJSON(id)
            }
        }
        router.post("/_fake/refunds") { request, _ in
            try await self.control(request) { now, form in
                if let intent = form.first("payment_intent") {
                    try self.refund(paymentIntent: intent, at: now)
                } else if let subscription = form.first("subscription") {
                    let newest = self.state.withLock { state in
                        state.invoices.values.filter { $0.subscription == subscription && $0.isPaid && $0.amountPaid > 0 }.map(\.id).max()
                    }
                    guard let newest else { throw FakeStripeError("no paid invoice of \(subscription)") }
                    try self.refund(invoice: newest, at: now)
                } else {
                    throw FakeStripeError("give payment_intent or subscription")
                }
                return ["refunded": true]
            }
        }
    }

    func subscriptionJSON(_ id: String) throws -> [String: Any] {
        guard let subscription = state.withLock({ $0.subscriptions[id] }) else { throw FakeStripeError("no subscription \(id)") }
        return Self.json(subscription, "subscription")
    }

    /// Runs a control action at the fake's clock, answering its object or a 400 with why not.
    func control(_ request: Request, _ action: @escaping @Sendable (Int64, FormPairs) throws -> [String: Any]) async throws -> Response {
        guard request.headers[.authorization] == "Bearer \(apiKey)" else {
            return Self.error(401, "invalid_request_error", nil, "Invalid API Key provided.")
        }
        let form = FormPairs(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
        do {
            var answer = try action(Int64(clock().timeIntervalSince1970), form)
            // Delivered before answering: once the command returns, Storekeeper has the events — or says why not.
            if let webhookURL, let refusal = await deliver(to: webhookURL).refusal { answer["undelivered"] = refusal }
            return Self.answer(answer)
        } catch let error as FakeStripeError {
            return Self.error(400, "invalid_request_error", nil, error.description)
        }
    }

    /// Posts every event not delivered yet to `url`, signed at the fake's clock (`dev`: the dev clock, the intake's),
    /// oldest first; stops at the first that is not answered 2xx (Stripe retries it later: so does the next call).
    /// Returns how many were delivered, and the answer that stopped it.
    @discardableResult
    public func deliver(to url: String, httpClient: HTTPClient = .shared) async -> (delivered: Int, refusal: String?) {
        var delivered = 0
        while let event = state.withLock({ state in state.delivered < state.events.count ? state.events[state.delivered] : nil }) {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Stripe-Signature", value: signature(of: event.body, at: Int64(clock().timeIntervalSince1970)))
            request.body = .bytes(ByteBuffer(data: event.body))
            guard let response = try? await httpClient.execute(request, timeout: .seconds(10)) else {
                return (delivered, "\(url) did not answer")
            }
            guard (200..<300).contains(response.status.code) else {
                let body = (try? await response.body.collect(upTo: 4096)).map { String(buffer: $0) } ?? ""
                return (delivered, "\(response.status.code) \(body.prefix(300))")
            }
            state.withLock { $0.delivered += 1 }
            delivered += 1
        }
        return (delivered, nil)
    }
}
