import Hummingbird
import NIOCore

/// `GET /openapi.json` (no authentication): the OpenAPI 3.1 description of every route — the Apple and Stripe
/// intakes, the service API, the admin API and dashboard, health and metrics. It is `docs/openapi.json`, built into
/// the binary (``OpenAPIDocument``) so a deployed server describes exactly the routes it has; `OpenAPITests` keeps the
/// two identical and the document true to the router.
public struct OpenAPIController: Sendable {
    public init() {}

    public func addRoutes(to router: Router<StorekeeperRequestContext>) {
        let body = ByteBuffer(string: OpenAPIDocument.text)
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: APIError.jsonContentType, .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: body))
        }
    }
}
