import Foundation
import HTTPTypes
import Hummingbird
import StripeStore

/// Stripe's API as its reference describes it: bearer secret key, form-encoded bodies, `expand[]`, lists with
/// `limit`/`starting_after`/`has_more`, `{"error": {...}}` envelopes, and — when ``State/failures`` holds some — 429 or
/// 5xx answers with `Retry-After`.
extension FakeStripe {
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/v1/subscriptions/{id}") { request, context in
            try await self.serve(request) { state, query in
                let id = try context.parameters.require("id")
                guard let subscription = state.subscriptions[id] else { return Self.missing("subscription", id) }
                return Self.answer(Self.json(subscription, "subscription"))
            }
        }
        router.get("/v1/subscriptions") { request, _ in
            try await self.serve(request) { state, query in
                var items = state.subscriptions.values.sorted { $0.id > $1.id }
                if let since = query.first("created[gte]").flatMap(Int64.init) { items = items.filter { $0.created >= since } }
                return Self.page(items.map { ($0.id, Self.json($0, "subscription")) }, query: query, url: "/v1/subscriptions")
            }
        }
        router.get("/v1/invoices/{id}") { request, context in
            try await self.serve(request) { state, query in
                let id = try context.parameters.require("id")
                guard let invoice = state.invoices[id] else { return Self.missing("invoice", id) }
                return Self.answer(Self.json(invoice, "invoice", expanding: query.all("expand[]")))
            }
        }
        router.get("/v1/invoices") { request, _ in
            try await self.serve(request) { state, query in
                var items = state.invoices.values.sorted { $0.id > $1.id }
                if let subscription = query.first("subscription") { items = items.filter { $0.subscription == subscription } }
                let expand = query.all("expand[]").compactMap { $0.hasPrefix("data.") ? String($0.dropFirst(5)) : nil }
                return Self.page(items.map { ($0.id, Self.json($0, "invoice", expanding: expand)) }, query: query, url: "/v1/invoices")
            }
        }
        router.get("/v1/invoice_payments") { request, _ in
            try await self.serve(request) { state, query in
                let intent = query.first("payment[payment_intent]")
                var items: [(String, [String: Any])] = []
                for invoice in state.invoices.values.sorted(by: { $0.id > $1.id }) {
                    for payment in invoice.payments?.data ?? [] where intent == nil || payment.payment.paymentIntent == intent {
                        var object = Self.json(payment, "invoice_payment")
                        object["invoice"] = invoice.id
                        items.append((payment.id, object))
                    }
                }
                return Self.page(items, query: query, url: "/v1/invoice_payments")
            }
        }
        router.get("/v1/charges/{id}") { request, context in
            try await self.serve(request) { state, query in
                let id = try context.parameters.require("id")
                guard let charge = state.charges[id] else { return Self.missing("charge", id) }
                var object = Self.json(charge, "charge", expanding: query.all("expand[]"))
                object["refunded"] = charge.amountRefunded >= charge.amount
                object["disputed"] = state.disputes.values.contains { $0.charge == id }
                return Self.answer(object)
            }
        }
        router.get("/v1/charges") { request, _ in
            try await self.serve(request) { state, query in
                var items = state.charges.values.sorted { $0.id > $1.id }
                if let intent = query.first("payment_intent") { items = items.filter { $0.paymentIntent == intent } }
                let expand = query.all("expand[]").compactMap { $0.hasPrefix("data.") ? String($0.dropFirst(5)) : nil }
                return Self.page(items.map { ($0.id, Self.json($0, "charge", expanding: expand)) }, query: query, url: "/v1/charges")
            }
        }
        router.get("/v1/disputes/{id}") { request, context in
            try await self.serve(request) { state, query in
                let id = try context.parameters.require("id")
                guard let dispute = state.disputes[id] else { return Self.missing("dispute", id) }
                return Self.answer(Self.json(dispute, "dispute"))
            }
        }
        router.get("/v1/checkout/sessions/{id}") { request, context in
            try await self.serve(request) { state, query in
                let id = try context.parameters.require("id")
                guard let session = state.sessions[id] else { return Self.missing("checkout.session", id) }
                return Self.answer(Self.json(session, "checkout.session", expanding: query.all("expand[]")))
            }
        }
        router.post("/v1/checkout/sessions") { request, _ in
            try await self.serve(request) { state, form in
                try self.createSession(form, idempotencyKey: request.headers[.init("Idempotency-Key")!], in: &state)
            }
        }
        router.post("/v1/billing_portal/sessions") { request, _ in
            try await self.serve(request) { state, form in
                guard let customer = form.first("customer"), let returnURL = form.first("return_url") else {
                    return Self.error(400, "invalid_request_error", "parameter_missing", "Missing required param: customer.")
                }
                let id = self.nextId("bps", in: &state)
                return Self.answer([
                    "id": id, "object": "billing_portal.session", "customer": customer, "return_url": returnURL,
                    "url": "\(self.hostedURL)/p/session/\(id)",
                ])
            }
        }
        addControlRoutes(to: router)
        return router
    }

    /// Checks the key, answers a queued failure, and runs `body` on the state with the query (GET) or form (POST).
    func serve(_ request: Request, _ body: @escaping @Sendable (inout State, FormPairs) throws -> Response) async throws -> Response {
        var form = FormPairs(request.uri.query ?? "")
        if request.method == .post {
            let bytes = try await request.body.collect(upTo: 1 << 20)
            form = FormPairs(String(buffer: bytes))
        }
        let line = "\(request.method) \(request.uri.path)\(request.uri.query.map { "?" + $0 } ?? "")"
        let version = request.headers[HTTPField.Name("Stripe-Version")!]
        return try state.withLock { state in
            state.requests.append(line)
            state.versions.append(version ?? "")
            guard request.headers[.authorization] == "Bearer \(apiKey)" else {
                return Self.error(401, "invalid_request_error", nil, "Invalid API Key provided.")
            }
            // "Idempotency keys are up to 255 characters long" (docs.stripe.com/api/idempotent_requests).
            if let key = request.headers[.init("Idempotency-Key")!], key.count > 255 {
                return Self.error(
                    400, "invalid_request_error", nil, "Keys for idempotent requests can only be 255 characters long. You provided \(key.count).")
            }
            if !state.failures.isEmpty {
                let failure = state.failures.removeFirst()
                var response = Self.error(
                    failure.status, failure.status == 429 ? "rate_limit_error" : "api_error", failure.status == 429 ? "rate_limit" : nil, "Try again."
                )
                if let seconds = failure.retryAfter { response.headers[.retryAfter] = String(seconds) }
                return response
            }
            return try body(&state, form)
        }
    }

    func createSession(_ form: FormPairs, idempotencyKey: String?, in state: inout State) throws -> Response {
        if let idempotencyKey, let earlier = state.idempotent[idempotencyKey], let session = state.sessions[earlier] {
            return Self.answer(Self.json(session, "checkout.session"))
        }
        switch try openSession(form, in: &state) {
        case .success(let session):
            if let idempotencyKey { state.idempotent[idempotencyKey] = session.id }
            return Self.answer(Self.json(session, "checkout.session"))
        case .failure(let refusal):
            return refusal.response
        }
    }

    /// A refusal of a request, as Stripe answers it.
    struct Refusal: Error {
        var status: Int, type: String, code: String?, message: String
        var response: Response { FakeStripe.error(status, type, code, message) }
    }

    /// Opens a session from a creation form, or says why not.
    func openSession(_ form: FormPairs, in state: inout State) throws -> Result<StripeCheckoutSession, Refusal> {
        guard let mode = form.first("mode"), ["subscription", "payment"].contains(mode) else {
            return .failure(
                Refusal(
                    status: 400, type: "invalid_request_error", code: "parameter_invalid_string",
                    message: "Invalid mode: must be one of payment, setup, or subscription."))
        }
        guard let priceId = form.first("line_items[0][price]"), let price = state.prices[priceId] else {
            return .failure(
                Refusal(
                    status: 400, type: "invalid_request_error", code: "resource_missing",
                    message: "No such price: '\(form.first("line_items[0][price]") ?? "")'"))
        }
        guard form.first("success_url") != nil else {
            return .failure(
                Refusal(status: 400, type: "invalid_request_error", code: "parameter_missing", message: "Missing required param: success_url."))
        }
        // The session's own metadata, and what it copies onto the subscription it creates.
        var metadata: [String: String] = [:]
        var subscriptionMetadata: [String: String] = [:]
        for (key, value) in form.pairs {
            if key.hasPrefix("subscription_data[metadata][") {
                subscriptionMetadata[String(key.dropFirst("subscription_data[metadata][".count).dropLast())] = value
            } else if key.hasPrefix("metadata[") {
                metadata[String(key.dropFirst("metadata[".count).dropLast())] = value
            }
        }
        let id = nextId("cs_test", in: &state)
        let json: [String: Any] = [
            "id": id, "mode": mode, "status": "open", "payment_status": "unpaid",
            "client_reference_id": form.first("client_reference_id") ?? NSNull(),
            "customer": form.first("customer") ?? NSNull(), "metadata": metadata, "url": "\(hostedURL)/c/pay/\(id)", "livemode": false,
            "created": Int64(clock().timeIntervalSince1970), "expires_at": Int64(clock().timeIntervalSince1970) + 86_400,
            "line_items": [
                "data": [["id": "li_\(id)", "price": Self.json(price, "price"), "quantity": Int(form.first("line_items[0][quantity]") ?? "1") ?? 1]],
                "has_more": false,
            ],
        ]
        let session = try JSONDecoder().decode(StripeCheckoutSession.self, from: JSONSerialization.data(withJSONObject: json))
        state.sessions[id] = session
        state.subscriptionMetadata[id] = subscriptionMetadata
        return .success(session)
    }

    /// Opens a Checkout Session as the API would, outside HTTP: what an app's own backend does with Stripe directly.
    /// `extra` are more of the API's form fields (`customer`, `metadata[…]`, `subscription_data[metadata][…]`).
    public func createSession(priceId: String, mode: String, account: String?, extra: [(String, String)] = []) throws -> String {
        var pairs = [("mode", mode), ("line_items[0][price]", priceId), ("line_items[0][quantity]", "1"), ("success_url", "https://app.example/ok")]
        if let account { pairs.append(("client_reference_id", account)) }
        pairs += extra
        var form = FormPairs("")
        form.pairs = pairs
        return try state.withLock { state in
            switch try openSession(form, in: &state) {
            case .success(let session): return session.id
            case .failure(let refusal): throw FakeStripeError(refusal.message)
            }
        }
    }

    // MARK: - JSON

    /// An object as Stripe sends it: its fields, `object`, and the includable fields only when expanded.
    public static func json(_ value: some Encodable, _ object: String, expanding: [String] = []) -> [String: Any] {
        guard let data = try? JSONEncoder().encode(value), var json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            return [:]
        }
        json["object"] = object
        let includable = ["invoice": ["payments"], "charge": ["refunds"], "checkout.session": ["line_items"]][object] ?? []
        for field in includable where !expanding.contains(field) { json.removeValue(forKey: field) }
        return json
    }

    static func answer(_ json: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func page(_ items: [(String, [String: Any])], query: FormPairs, url: String) -> Response {
        let limit = min(max(Int(query.first("limit") ?? "10") ?? 10, 1), 100)
        var rest = items[...]
        if let after = query.first("starting_after") {
            guard let index = items.firstIndex(where: { $0.0 == after }) else {
                return error(400, "invalid_request_error", "resource_missing", "No such object: '\(after)'")
            }
            rest = items[(index + 1)...]
        }
        let page = rest.prefix(limit)
        return answer(["object": "list", "url": url, "data": page.map(\.1), "has_more": rest.count > page.count])
    }

    static func missing(_ object: String, _ id: String) -> Response {
        error(404, "invalid_request_error", "resource_missing", "No such \(object): '\(id)'")
    }

    static func error(_ status: Int, _ type: String, _ code: String?, _ message: String) -> Response {
        var detail: [String: Any] = ["type": type, "message": message]
        if let code { detail["code"] = code }
        return answer(["error": detail], status: .init(code: status))
    }
}

/// Form or query pairs, percent-decoded (`+` is a space), in order.
public struct FormPairs: Sendable {
    public var pairs: [(String, String)]

    public init(_ encoded: String) {
        pairs = encoded.split(separator: "&").compactMap { part in
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = Self.decode(halves[0]) else { return nil }
            return (key, halves.count > 1 ? Self.decode(halves[1]) ?? "" : "")
        }
    }

    public func first(_ key: String) -> String? { pairs.first { $0.0 == key }?.1 }
    public func all(_ key: String) -> [String] { pairs.filter { $0.0 == key }.map(\.1) }

    static func decode(_ text: Substring) -> String? { text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
}
