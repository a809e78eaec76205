import Foundation

/// base64url without padding, as used for JWS segments (RFC 7515 §2).
enum Base64URL {
    /// Decodes base64url text (padding optional). Returns `nil` for any character outside the URL-safe alphabet.
    static func decode(_ text: Substring) -> Data? {
        var standard = String()
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-": standard.append("+")
            case "_": standard.append("/")
            case "+", "/": return nil
            default: standard.unicodeScalars.append(scalar)
            }
        }
        while standard.utf8.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard)
    }

    /// Encodes bytes as base64url without padding.
    static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
