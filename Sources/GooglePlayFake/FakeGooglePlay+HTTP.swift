import Foundation
import HTTPTypes
import Hummingbird

/// Google's certificate endpoints, at the paths Google serves them: `/oauth2/v3/certs` (JWK set) and
/// `/oauth2/v1/certs` (`{kid: PEM}`).
extension FakeGooglePlay {
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/oauth2/v3/certs") { _, _ in Self.json(self.keySetDocument()) }
        router.get("/oauth2/v1/certs") { _, _ in Self.json(self.pemDocument()) }
        return router
    }

    static func json(_ bytes: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=UTF-8", .cacheControl: "public, max-age=21600"],
            body: .init(byteBuffer: .init(bytes: bytes)))
    }
}
