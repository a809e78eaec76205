import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import _CryptoExtras

/// Google over HTTP, at the paths Google serves: the certificates (`/oauth2/v3/certs` as a JWK set, `/oauth2/v1/certs`
/// as `{kid: PEM}`), the token endpoint (`POST /token`, the JWT-bearer grant) and the Play Developer API's
/// `purchases.subscriptionsv2.get`, with Google's error envelope and — when ``failNext(_:)`` queued some — 429 or
/// 5xx answers with `Retry-After`.
extension FakeGooglePlay {
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/oauth2/v3/certs") { _, _ in Self.json(self.keySetDocument()) }
        router.get("/oauth2/v1/certs") { _, _ in Self.json(self.pemDocument()) }
        router.post("/token") { request, _ in
            let body = try await request.body.collect(upTo: 64 << 10)
            return self.grant(form: String(buffer: body))
        }
        router.get("/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/{token}") { request, context in
            let package = try context.parameters.require("package")
            let token = try context.parameters.require("token")
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                guard let subscription = self.state.withLock({ $0.subscriptions[token] }) else {
                    return Self.error(404, "NOT_FOUND", "The purchase token was not found.")
                }
                return Self.json(
                    Array((try? JSONSerialization.data(withJSONObject: self.subscriptionPurchaseV2(subscription), options: .sortedKeys)) ?? Data()))
            }
        }
        // `tokens/{token}:acknowledge`: the method is the last segment's suffix, as Google's custom methods are.
        router.post("/androidpublisher/v3/applications/{package}/purchases/subscriptions/{productId}/tokens/{tokenMethod}") { request, context in
            let package = try context.parameters.require("package")
            let productId = try context.parameters.require("productId")
            let segment = try context.parameters.require("tokenMethod")
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                guard segment.hasSuffix(":acknowledge") else { return Self.error(404, "NOT_FOUND", "Method not found.") }
                let token = String(segment.dropLast(":acknowledge".count)).removingPercentEncoding ?? ""
                return self.acknowledge(token, productId: productId)
            }
        }
        router.get("/androidpublisher/v3/applications/{package}/purchases/productsv2/tokens/{token}") { request, context in
            let package = try context.parameters.require("package")
            let token = try context.parameters.require("token")
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                guard let product = self.state.withLock({ $0.products[token] }) else {
                    return Self.error(404, "NOT_FOUND", "The purchase token was not found.")
                }
                return Self.json(
                    Array((try? JSONSerialization.data(withJSONObject: self.productPurchaseV2(product), options: .sortedKeys)) ?? Data()))
            }
        }
        router.post("/androidpublisher/v3/applications/{package}/purchases/products/{productId}/tokens/{tokenMethod}") { request, context in
            let package = try context.parameters.require("package")
            let productId = try context.parameters.require("productId")
            let segment = try context.parameters.require("tokenMethod")
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                for method in [":acknowledge", ":consume"] where segment.hasSuffix(method) {
                    let token = String(segment.dropLast(method.count)).removingPercentEncoding ?? ""
                    return self.finishProduct(token, productId: productId, consuming: method == ":consume")
                }
                return Self.error(404, "NOT_FOUND", "Method not found.")
            }
        }
        router.get("/androidpublisher/v3/applications/{package}/purchases/voidedpurchases") { request, context in
            let package = try context.parameters.require("package")
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                return self.voidedPage(request)
            }
        }
        router.post("/androidpublisher/v3/applications/{package}/orders/{orderMethod}") { request, context in
            let package = try context.parameters.require("package")
            let segment = try context.parameters.require("orderMethod")
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let body = (try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]) ?? [:]
            return self.serve(request) {
                guard package == self.packageName else { return Self.error(404, "NOT_FOUND", "No application was found for the given package name.") }
                guard segment.hasSuffix(":reviewrefund") else { return Self.error(404, "NOT_FOUND", "Method not found.") }
                return self.reviewRefund(order: String(segment.dropLast(":reviewrefund".count)).removingPercentEncoding ?? "", body: body)
            }
        }
        return router
    }

    /// An API request: a granted bearer token, then a queued failure if any, then `answer`.
    func serve(_ request: Request, _ answer: () -> Response) -> Response {
        let authorization = request.headers[.authorization] ?? ""
        let outcome = state.withLock { state -> Int? in
            state.apiRequests += 1
            guard authorization.hasPrefix("Bearer "), state.accessTokens.contains(String(authorization.dropFirst(7))) else { return 401 }
            return state.failures.isEmpty ? nil : state.failures.removeFirst()
        }
        switch outcome {
        case .none: return answer()
        case 401: return Self.error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        case 429: return Self.error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Queries'.", retryAfter: 0)
        case 400: return Self.error(400, "INVALID_ARGUMENT", "Invalid Value")
        case .some(let status): return Self.error(status, "UNAVAILABLE", "The service is currently unavailable.", retryAfter: 0)
        }
    }

    /// The JWT-bearer grant: an RS256 assertion by the fake's service account, for the androidpublisher scope, whose
    /// `aud` is this endpoint, valid at most an hour.
    func grant(form: String) -> Response {
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = fields["assertion"] else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type.")
        }
        let segments = assertion.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.count == 3, let payload = Self.base64URL(segments[1]), let signature = Self.base64URL(segments[2]),
            serviceAccountKey.publicKey.isValidSignature(
                .init(rawRepresentation: signature), for: SHA256.hash(data: Data((segments[0] + "." + segments[1]).utf8)), padding: .insecurePKCS1v1_5
            ),
            let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return Self.oauthError("invalid_grant", "Invalid JWT Signature.") }
        let now = Date().timeIntervalSince1970
        guard claims["iss"] as? String == serviceAccountEmail,
            (claims["scope"] as? String)?.split(separator: " ").contains("https://www.googleapis.com/auth/androidpublisher") == true,
            let iat = (claims["iat"] as? NSNumber)?.doubleValue, let exp = (claims["exp"] as? NSNumber)?.doubleValue,
            exp - iat <= 3600, exp > now, iat <= now + 60
        else { return Self.oauthError("invalid_grant", "Invalid JWT: claims, scope or times are wrong.") }
        let token = state.withLock { state -> String in
            state.grants += 1
            let token = "ya29.fake-\(state.grants)-" + UUID().uuidString
            state.accessTokens.insert(token)
            return token
        }
        return Self.json(Array(#"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#.utf8))
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func json(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=UTF-8", .cacheControl: "public, max-age=21600"],
            body: .init(byteBuffer: .init(bytes: bytes)))
    }

    /// Google's JSON error envelope (AIP-193): `{"error": {"code", "message", "status", "errors": [...]}}`.
    static func error(_ code: Int, _ status: String, _ message: String, retryAfter: Int? = nil) -> Response {
        let envelope: [String: Any] = [
            "error": [
                "code": code, "message": message, "status": status,
                "errors": [["message": message, "domain": "global", "reason": status.lowercased()]],
            ] as [String: Any]
        ]
        var response = json(Array((try? JSONSerialization.data(withJSONObject: envelope, options: .sortedKeys)) ?? Data()), status: .init(code: code))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The token endpoint's OAuth error (RFC 6749 §5.2), answered 400.
    static func oauthError(_ error: String, _ description: String) -> Response {
        json(Array(#"{"error":"\#(error)","error_description":"\#(description)"}"#.utf8), status: .badRequest)
    }
}
