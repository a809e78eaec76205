import Crypto
import Foundation
import Hummingbird

/// Admits requests whose `Authorization: Bearer <key>` matches one of the configured keys, compared in constant
/// time (SHA-256 digests, every key checked); everything else gets 401. With a `basicRealm` (the admin dashboard),
/// `Authorization: Basic` with the key as password is admitted too, so a browser can sign in.
public struct BearerKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    private let keyDigests: [SHA256.Digest]
    private let basicRealm: String?

    public init(keys: [String], basicRealm: String? = nil) {
        self.keyDigests = keys.map { SHA256.hash(data: Data($0.utf8)) }
        self.basicRealm = basicRealm
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let key = presentedKey(request), admits(key) else {
            guard let basicRealm else { throw APIError.unauthorized }
            let challenge = APIError(
                .unauthorized, code: "unauthorized",
                message: "sign in with HTTP Basic: any user name, an admin key as the password (or send it as a bearer key)")
            var response = try challenge.response(from: request, context: context)
            response.headers[.wwwAuthenticate] = "Basic realm=\"\(basicRealm)\", charset=\"UTF-8\""
            return response
        }
        return try await next(request, context)
    }

    private func presentedKey(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        if header.hasPrefix("Bearer ") { return String(header.dropFirst("Bearer ".count)) }
        guard basicRealm != nil, header.hasPrefix("Basic "), let data = Data(base64Encoded: String(header.dropFirst("Basic ".count))),
            let credentials = String(data: data, encoding: .utf8), let colon = credentials.firstIndex(of: ":")
        else { return nil }
        return String(credentials[credentials.index(after: colon)...])
    }

    private func admits(_ key: String) -> Bool {
        let presented = SHA256.hash(data: Data(key.utf8))
        var matched = false
        for digest in keyDigests where Self.constantTimeEqual(digest, presented) { matched = true }
        return matched
    }

    private static func constantTimeEqual(_ lhs: SHA256.Digest, _ rhs: SHA256.Digest) -> Bool {
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}
