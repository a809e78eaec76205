import Foundation

/// A compact JWS split into its parts, with the header decoded. Nothing in it is trusted yet.
struct CompactJWS {
    /// The JOSE header fields we use; unknown keys (`typ`, `kid`) are ignored.
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    let header: Header
    let payload: Data
    /// The exact ASCII bytes `<header>.<payload>` as received — what the signature covers.
    let signingInput: Substring
    let signature: Data

    /// Splits and decodes `text`; any structural problem is `malformed`.
    init(parsing text: String) throws(VerificationError) {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw .malformed("expected 3 JWS segments, found \(segments.count)")
        }
        guard let headerBytes = Base64URL.decode(segments[0]) else { throw .malformed("header is not base64url") }
        guard let payloadBytes = Base64URL.decode(segments[1]) else { throw .malformed("payload is not base64url") }
        guard let signatureBytes = Base64URL.decode(segments[2]) else { throw .malformed("signature is not base64url") }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerBytes) else {
            throw .malformed("header is not a JSON object")
        }
        self.header = header
        self.payload = payloadBytes
        self.signature = signatureBytes
        self.signingInput = text[segments[0].startIndex..<segments[1].endIndex]
    }
}
