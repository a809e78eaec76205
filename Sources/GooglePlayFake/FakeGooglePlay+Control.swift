import AsyncHTTPClient
import Credits
import Foundation
import Hummingbird
import NIOCore

/// What `storekeeper dev --fake-play` adds to the fake: routes that act as the customer and as Play's billing would
/// (`POST /_fake/play/…` — Google has no such routes; Play Console's license testers are their nearest kin), each
/// publishing the DeveloperNotification Play would, pushed to Storekeeper's intake as Cloud Pub/Sub pushes it (the
/// wrapped body, an OIDC token signed by the fake's key).
extension FakeGooglePlay {
    /// Where pushes go, and as whom.
    public struct PushTarget: Sendable {
        public var url: String
        public var audience: String
        public var serviceAccount: String

        public init(url: String, audience: String, serviceAccount: String) {
            self.url = url
            self.audience = audience
            self.serviceAccount = serviceAccount
        }
    }

    /// The catalogue's Play subscriptions as plans the fake sells: `<productId>/<basePlanId>`, the base plan's period
    /// and price.
    /// The catalogue's Play one-time products: lifetime unlocks, passes and top-ups.
    public static func products(of catalogue: TierCatalogue) -> Set<String> {
        let tiers = catalogue.tiers.flatMap(\.products).filter { $0.store == .googlePlay && $0.type != .autoRenewable }.map(\.id)
        return Set(tiers + catalogue.topUps.filter { $0.store == .googlePlay }.map(\.id))
    }

    public static func plans(of catalogue: TierCatalogue) -> [String: Plan] {
        var plans: [String: Plan] = [:]
        for product in catalogue.tiers.flatMap(\.products) where product.store == .googlePlay && product.type == .autoRenewable {
            let parts = product.id.split(separator: "/").map(String.init)
            guard parts.count == 2, let period = product.billingPeriod else { continue }
            // Play counts a base plan's months on the calendar; a period of days (P1W) in seconds.
            plans[product.id] = Plan(
                productId: parts[0], basePlanId: parts[1], period: Double(period.days) * 86_400, months: period.months,
                priceMicros: product.price * 1000, currency: product.currency)
        }
        return plans
    }

    /// The control routes, acting at `clock`'s now (`dev`: the dev clock), each pushing its notification to `target`
    /// before it answers `{"purchaseToken", "notificationType"}` (and `undelivered` with the intake's answer, if it
    /// refused). `POST /_fake/play/buy {"account"?, "product", "trialDays"?}`;
    /// `POST /_fake/play/tokens/{token}/{action}` for renew, cancel, restore, grace, hold, recover, pause, resume,
    /// expire, revoke; `POST /_fake/play/tokens/{token}/replace {"product"}` (an upgrade or a downgrade);
    /// `POST /_fake/play/products/buy {"account"?, "product", "quantity"?}` (a one-time product of `products`);
    /// `POST /_fake/play/orders/{orderId}/refund {"quantity"?}` and `…/chargeback`; `GET /_fake/play/reviews` (the
    /// `orders.reviewrefund` bodies received).
    public func addControlRoutes(
        to router: Router<BasicRequestContext>, plans: [String: Plan], products: Set<String> = [], target: PushTarget,
        clock: @escaping @Sendable () -> Date
    ) {
        router.post("/_fake/play/buy") { request, _ in
            try await self.control(request, target: target) { body in
                guard let name = body["product"] as? String, let plan = plans[name] else {
                    throw ControlRefusal("product must be one of \(plans.keys.sorted().joined(separator: ", "))")
                }
                let trialDays = body["trialDays"] as? Int ?? 0
                guard (0...365).contains(trialDays) else { throw ControlRefusal("trialDays must be 0–365") }
                return self.buy(plan, accountToken: body["account"] as? String, at: clock(), trialDays: trialDays)
            }
        }
        router.post("/_fake/play/products/buy") { request, _ in
            try await self.control(request, target: target) { body in
                guard let product = body["product"] as? String, products.contains(product) else {
                    throw ControlRefusal("product must be one of \(products.sorted().joined(separator: ", "))")
                }
                let quantity = body["quantity"] as? Int ?? 1
                guard (1...100).contains(quantity) else { throw ControlRefusal("quantity must be 1–100") }
                return self.buyProduct(product, quantity: quantity, accountToken: body["account"] as? String, at: clock())
            }
        }
        router.post("/_fake/play/orders/{order}/{action}") { request, context in
            let order = try context.parameters.require("order")
            let action = try context.parameters.require("action")
            return try await self.control(request, target: target) { body in
                switch action {
                case "refund":
                    let quantity = body["quantity"] as? Int
                    if let quantity, quantity < 1 { throw ControlRefusal("quantity must be at least 1") }
                    return try self.refund(order: order, quantity: quantity, at: clock())
                case "chargeback": return try self.chargeback(order: order, at: clock())
                default: throw ControlRefusal("no action \(action): refund, chargeback")
                }
            }
        }
        router.get("/_fake/play/reviews") { _, _ in
            let reviews = self.refundReviews
            return Self.json(Array((try? JSONSerialization.data(withJSONObject: ["reviews": reviews], options: .sortedKeys)) ?? Data()))
        }
        router.post("/_fake/play/tokens/{token}/{action}") { request, context in
            let token = try context.parameters.require("token")
            let action = try context.parameters.require("action")
            return try await self.control(request, target: target) { body in
                let now = clock()
                switch action {
                case "renew": return (token, try self.renew(token, at: now))
                case "cancel": return (token, try self.cancel(token, at: now))
                case "restore": return (token, try self.restore(token, at: now))
                case "grace": return (token, try self.grace(token, at: now))
                case "hold": return (token, try self.hold(token, at: now))
                case "recover": return (token, try self.recover(token, at: now))
                case "pause": return (token, try self.pause(token, at: now))
                case "resume": return (token, try self.resume(token, at: now))
                case "expire": return (token, try self.expire(token, at: now))
                case "revoke": return (token, try self.revoke(token, at: now))
                case "replace":
                    guard let name = body["product"] as? String, let plan = plans[name] else {
                        throw ControlRefusal("product must be one of \(plans.keys.sorted().joined(separator: ", "))")
                    }
                    return try self.replace(token, with: plan, at: now)
                default:
                    throw ControlRefusal("no action \(action): renew, cancel, restore, grace, hold, recover, pause, resume, expire, revoke, replace")
                }
            }
        }
    }

    struct ControlRefusal: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Runs an action, pushes its notification, and answers the token; a refusal (or an unknown token) is a 400.
    func control(
        _ request: Request, target: PushTarget, _ action: @escaping @Sendable ([String: Any]) throws -> (token: String, notification: [String: Any])
    ) async throws -> Response {
        let bytes = try await request.body.collect(upTo: 64 * 1024)
        let body = bytes.readableBytes == 0 ? [:] : (try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]) ?? [:]
        let done: (token: String, notification: [String: Any])
        do {
            done = try action(body)
        } catch let refusal as ControlRefusal {
            return Self.error(400, "INVALID_ARGUMENT", refusal.message)
        } catch {
            return Self.error(400, "INVALID_ARGUMENT", "\(error)")
        }
        var answer: [String: Any] = [
            "purchaseToken": done.token,
            "notificationType": (done.notification["subscriptionNotification"] as? [String: Any])?["notificationType"]
                ?? (done.notification["oneTimeProductNotification"] as? [String: Any])?["notificationType"] ?? 0,
        ]
        // What a customer or an operator names next: the order (a refund, a chargeback).
        if let order = order(ofProduct: done.token) ?? orders(ofSubscription: done.token).last { answer["orderId"] = order }
        if let refusal = await push(done.notification, to: target) { answer["undelivered"] = refusal }
        return Self.json(Array((try? JSONSerialization.data(withJSONObject: answer, options: .sortedKeys)) ?? Data()))
    }

    /// Pushes `notification` to the target as Pub/Sub would; the intake's refusal, if any.
    public func push(_ notification: [String: Any], to target: PushTarget, httpClient: HTTPClient = .shared) async -> String? {
        var request = HTTPClientRequest(url: target.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        guard let token = try? pushToken(PushClaims(audience: target.audience, email: target.serviceAccount)) else {
            return "the push could not be signed"
        }
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(bytes: pushBody(notification).body))
        guard let response = try? await httpClient.execute(request, timeout: .seconds(10)) else { return "\(target.url) did not answer" }
        guard (200..<300).contains(response.status.code) else {
            let body = (try? await response.body.collect(upTo: 4096)).map { String(buffer: $0) } ?? ""
            return "\(response.status.code) \(body.prefix(300))"
        }
        return nil
    }
}
