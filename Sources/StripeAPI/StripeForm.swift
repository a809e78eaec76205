/// Stripe's request encoding: `application/x-www-form-urlencoded` pairs, nested keys in brackets (`a[b]=c`, `expand[]=x`),
/// in the order given.
public struct StripeForm: Sendable, Equatable {
    public var pairs: [(String, String)]

    public init(_ pairs: [(String, String)] = []) { self.pairs = pairs }

    public static func == (lhs: StripeForm, rhs: StripeForm) -> Bool { lhs.pairs.elementsEqual(rhs.pairs, by: ==) }

    public mutating func append(_ key: String, _ value: String?) {
        if let value { pairs.append((key, value)) }
    }

    /// The encoded body or query string.
    public var encoded: String { pairs.map { "\(Self.escape($0.0))=\(Self.escape($0.1))" }.joined(separator: "&") }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    public static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
