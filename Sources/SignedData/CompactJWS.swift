import Foundation

/// A compact JWS split into its parts. Nothing in it is trusted yet; the header is decoded only on demand, because a
/// header already seen with a verified chain need not be decoded again.
struct CompactJWS {
    /// The JOSE header fields we use (`kid` only by Google's push tokens); unknown keys (`typ`) are ignored.
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
        var kid: String?
    }

    /// The header segment exactly as received (base64url bytes).
    let headerSegment: Data
    let payload: Data
    /// The exact ASCII bytes `<header>.<payload>` as received — what the signature covers.
    let signingInput: Data
    let signature: Data

    /// Splits `text` (on bytes: JWS is ASCII) and decodes payload and signature; any structural problem is
    /// `malformed`.
    init(parsing text: String) throws(VerificationError) {
        var text = text
        text.makeContiguousUTF8()
        // The two dots found in place, then one copy that the segments share as slices.
        let split = text.utf8.withContiguousStorageIfAvailable { buffer -> (Data, Int, Int)? in
            guard let (first, second) = CompactSegments.dots(in: buffer) else { return nil }
            return (Data(buffer), first, second)
        }
        guard let split, let (bytes, first, second) = split else {
            throw .malformed("expected 3 JWS segments, found \(text.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: ".") ? 1 : 0) })")
        }
        let decoded = bytes.withUnsafeBytes { raw -> (Data?, Data?) in
            let buffer = raw.bindMemory(to: UInt8.self)
            return (
                Base64URL.decode(UnsafeBufferPointer(rebasing: buffer[(first + 1)..<second])),
                Base64URL.decode(UnsafeBufferPointer(rebasing: buffer[(second + 1)...]))
            )
        }
        guard let payload = decoded.0 else { throw .malformed("payload is not base64url") }
        guard let signature = decoded.1 else { throw .malformed("signature is not base64url") }
        self.headerSegment = bytes[..<first]
        self.payload = payload
        self.signature = signature
        self.signingInput = bytes[..<second]
    }

    /// Decodes the header.
    func header() throws(VerificationError) -> Header {
        guard let bytes = Base64URL.decode(headerSegment) else { throw .malformed("header is not base64url") }
        guard let header = try? SignedDataVerifier.decoder.decode(Header.self, from: bytes) else {
            throw .malformed("header is not a JSON object")
        }
        return header
    }
}
