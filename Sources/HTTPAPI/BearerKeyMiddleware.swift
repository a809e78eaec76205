import Crypto
import Foundation
import Hummingbird

/// Admits requests whose `Authorization: Bearer <key>` matches one of the configured keys, compared in constant
/// time (SHA-256 digests, every key checked); everything else gets 401.
public struct BearerKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    private let keyDigests: [SHA256.Digest]

    public init(keys: [String]) {
        self.keyDigests = keys.map { SHA256.hash(data: Data($0.utf8)) }
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { throw APIError.unauthorized }
        let presented = SHA256.hash(data: Data(header.dropFirst("Bearer ".count).utf8))
        var matched = false
        for digest in keyDigests where Self.constantTimeEqual(digest, presented) { matched = true }
        guard matched else { throw APIError.unauthorized }
        return try await next(request, context)
    }

    private static func constantTimeEqual(_ lhs: SHA256.Digest, _ rhs: SHA256.Digest) -> Bool {
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}
