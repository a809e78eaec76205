import Crypto
import Foundation
import Hummingbird

/// A set of secret keys a presented key is looked up in, in constant time: SHA-256 digests are compared, every key
/// checked whichever matches, so the time taken says nothing of how close a guess came.
struct KeyRing: Sendable {
    private let digests: [SHA256.Digest]

    init(keys: [String]) { self.digests = keys.map { SHA256.hash(data: Array($0.utf8)) } }

    /// The position of `presented` among the keys, or `nil`.
    func position(of presented: String) -> Int? {
        // An array, not `Data`: `Data`'s initialiser from a sequence asks the runtime for each of its conformances on
        // every request.
        let digest = SHA256.hash(data: Array(presented.utf8))
        var found: Int?
        for (index, candidate) in digests.enumerated() where Self.constantTimeEqual(candidate, digest) { found = index }
        return found
    }

    /// The key a request presents: `Authorization: Bearer <key>`, or with `basic` also HTTP Basic's password. The
    /// scheme's name is matched without regard to case, as RFC 9110 (§11.1) has it: `bearer <key>` is the same key.
    static func presentedKey(_ request: Request, basic: Bool) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        if let key = credentials(of: header, scheme: "bearer") { return String(key) }
        guard basic, let encoded = credentials(of: header, scheme: "basic"), let data = Data(base64Encoded: String(encoded)),
            let credentials = String(data: data, encoding: .utf8), let colon = credentials.firstIndex(of: ":")
        else { return nil }
        return String(credentials[credentials.index(after: colon)...])
    }

    /// What follows `scheme` (lowercase ASCII letters) and a space at the start of `header`, the scheme in any case; `nil`
    /// for another scheme. Byte by byte: every request with a key asks this.
    static func credentials(of header: String, scheme: String) -> Substring? {
        let bytes = header.utf8
        var index = bytes.startIndex
        for expected in scheme.utf8 {
            // `| 0x20` lowercases an ASCII letter and takes no other byte to one.
            guard index < bytes.endIndex, bytes[index] | 0x20 == expected else { return nil }
            bytes.formIndex(after: &index)
        }
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: " ") else { return nil }
        return header[bytes.index(after: index)...]
    }

    /// 401, with a `WWW-Authenticate: Basic` challenge when there is a realm a browser may sign in to.
    static func refusal(basicRealm: String?, request: Request, context: some RequestContext) throws -> Response {
        guard let basicRealm else { throw APIError.unauthorized }
        let challenge = APIError(
            .unauthorized, code: .unauthorized,
            message: "sign in with HTTP Basic: any user name, an operator key as the password (or send it as a bearer key)")
        var response = try challenge.response(from: request, context: context)
        response.headers[.wwwAuthenticate] = "Basic realm=\"\(basicRealm)\", charset=\"UTF-8\""
        return response
    }

    private static func constantTimeEqual(_ lhs: SHA256.Digest, _ rhs: SHA256.Digest) -> Bool {
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}
