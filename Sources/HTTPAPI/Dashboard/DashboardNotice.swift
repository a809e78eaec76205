import Crypto
import Foundation
import Hummingbird

/// What a dashboard form's redirect tells the page it lands on (`/admin?account=…&grantError=…`), signed for the
/// operator who sent the form: `<name>=<text>&<name>Signature=<HMAC-SHA256 of name and text>`, keyed by that
/// operator's own key. The page shows a notice only with that operator's signature, so a crafted link
/// (`/admin?erased=Erased:%20done`) shows nothing, and neither does a real one followed with another operator's key.
/// Bidirectional controls are taken out of what is shown: a right-to-left override would make the text read otherwise.
struct DashboardNotice: Sendable {
    /// The query parameters a notice comes back in.
    enum Name: String, Sendable, CaseIterable {
        case grantError, creditError, appStore, extendAll, erased
    }

    /// The signer of the operator whose request is being answered: ``OperatorMiddleware`` binds it around every admin
    /// route, so the redirect builders and the page that reads their notices need nothing passed down to them.
    @TaskLocal static var current: DashboardNotice?

    /// The longest notice shown.
    static let maximumLength = 300

    private let key: SymmetricKey

    /// A signer for the operator with `operatorKey`, by a key derived from it (HKDF): the operator's key itself is
    /// not held beside the requests it signs for.
    init(operatorKey: String) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(operatorKey.utf8)), info: Data("storekeeper dashboard notice".utf8), outputByteCount: 32)
    }

    /// `<name>=<text>&<name>Signature=<hex>`, percent-encoded, for a redirect's query — signed for the current
    /// operator; empty outside an admin request, where no page could show it.
    static func query(_ name: Name, _ text: String) -> String {
        guard let current else { return "" }
        let signature = current.signature(name, text).map { String(format: "%02x", $0) }.joined()
        return "\(name.rawValue)=\(encoded(text))&\(name.rawValue)Signature=\(signature)"
    }

    /// The text of notice `name` in `parameters` when the current operator's key signed it, without bidirectional
    /// controls and at most ``maximumLength`` characters; `nil` when it is absent, unsigned or signed otherwise.
    static func text(_ name: Name, in parameters: Parameters) -> String? {
        guard let current, let text = parameters.get(name.rawValue), let presented = parameters.get(name.rawValue + "Signature"),
            let code = bytes(hex: presented), current.isValid(code, name, text)
        else { return nil }
        return String(String.UnicodeScalarView(text.unicodeScalars.filter { !isBidiControl($0) }).prefix(maximumLength))
    }

    /// U+200E–U+200F (marks), U+202A–U+202E (embeddings and overrides), U+2066–U+2069 (isolates).
    static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        (0x200E...0x200F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// The name and the text, a newline between (no name holds one), so no two notices sign alike.
    private static func message(_ name: Name, _ text: String) -> Data { Data("\(name.rawValue)\n\(text)".utf8) }

    private func signature(_ name: Name, _ text: String) -> HMAC<SHA256>.MAC {
        HMAC<SHA256>.authenticationCode(for: Self.message(name, text), using: key)
    }

    /// Compared in constant time.
    private func isValid(_ code: Data, _ name: Name, _ text: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Self.message(name, text), using: key)
    }

    /// As the redirects have always encoded their parameters: what would end or split the value is escaped.
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#"))) ?? ""
    }

    private static func bytes(hex: String) -> Data? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes = Data(capacity: 32)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
