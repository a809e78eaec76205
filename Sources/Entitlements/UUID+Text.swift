import Foundation

// Ids go to and from text on every request and row: an account id, a hold's, a notification's, an event's.
// Foundation on Linux parses with `sscanf` and writes with `sprintf` (its vendored libuuid), in uppercase that is then
// lowercased: `perf` of `serve` put those two at about 2 % of its samples in the bench's spends and pairs
// (docs/capacity.md, "Ids as text by hand"). These read and write the 36-character form by hand, and every part of the
// server reads an id's text through them, so no two parts disagree on what is an id. (Here, in the module every other
// depends on, as is `UUID.systemRandom()`.)
extension UUID {
    /// The id's 36-character text in lowercase, as Storekeeper stores and answers every id: what
    /// `uuidString.lowercased()` gives.
    public var lowercasedText: String { text(digits: "0123456789abcdef") }

    /// The id's 36-character text in uppercase: what `uuidString` gives (as Apple's and the jobs' ids are written).
    public var uppercasedText: String { text(digits: "0123456789ABCDEF") }

    private func text(digits: StaticString) -> String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits.utf8Start[Int(byte >> 4)]
                    text[at + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    at += 2
                }
                return at
            }
        }
    }

    /// The id a 36-character text names, in either case: RFC 9562's form, hyphens at 8, 13, 18 and 23 and hexadecimal
    /// digits elsewhere, nothing more. Stricter than Foundation's `sscanf`, which has read a sign or a space inside a
    /// pair of digits (`45-5` as `45fb`).
    public init?(text: some StringProtocol) {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &bytes) { uuid in
            text.utf8.withContiguousStorageIfAvailable { Self.parse($0, into: uuid) } ?? Self.parse(Array(text.utf8), into: uuid)
        }
        guard parsed else { return nil }
        self.init(uuid: bytes)
    }

    /// `text` lowercased when it is an id's 36-character form (``init(text:)``), else `nil`: how an account id or a
    /// token that is a UUID is kept.
    public static func canonicalText(of text: String) -> String? {
        guard text.utf8.count == 36, let id = UUID(text: text) else { return nil }
        return text.utf8.contains(where: isUppercaseDigit) ? id.lowercasedText : text
    }

    private static func parse(_ text: some Collection<UInt8>, into uuid: UnsafeMutableRawBufferPointer) -> Bool {
        guard text.count == 36 else { return false }
        var high: UInt8?
        var at = 0
        for (index, byte) in text.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
                continue
            }
            guard let value = hexValue(byte) else { return false }
            if let first = high {
                uuid[at] = first << 4 | value
                at += 1
                high = nil
            } else {
                high = value
            }
        }
        return true
    }

    private static func isUppercaseDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
