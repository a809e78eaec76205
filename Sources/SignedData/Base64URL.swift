import Foundation

/// base64url without padding, as used for JWS segments (RFC 7515 §2).
enum Base64URL {
    /// Maps an ASCII byte to its 6-bit value; 0xFF for bytes outside the URL-safe alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// Decodes base64url bytes in one pass. Trailing `=` padding is tolerated; any other byte outside the URL-safe
    /// alphabet, an impossible length, or non-zero leftover bits give `nil`.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> Data? {
        var count = input.count
        while count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        guard count % 4 != 1 else { return nil }
        let outputCount = count * 3 / 4
        var output = Data(count: outputCount)
        let valid = values.withUnsafeBufferPointer { table in
            output.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) -> Bool in
                let out = raw.bindMemory(to: UInt8.self)
                var written = 0
                var index = 0
                while index + 4 <= count {
                    let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])], d = table[Int(input[index + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else { return false }
                    let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: word >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: word >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: word)
                    written += 3
                    index += 4
                }
                let rest = count - index
                guard rest > 0 else { return true }
                var word: UInt32 = 0
                for offset in 0..<rest {
                    let value = table[Int(input[index + offset])]
                    guard value & 0xC0 == 0 else { return false }
                    word = word << 6 | UInt32(value)
                }
                // 2 characters carry 1 byte (+4 zero bits), 3 carry 2 bytes (+2 zero bits).
                let spareBits = UInt32(rest == 2 ? 4 : 2)
                guard word & ((1 << spareBits) - 1) == 0 else { return false }
                word >>= spareBits
                if rest == 2 {
                    out[written] = UInt8(truncatingIfNeeded: word)
                } else {
                    out[written] = UInt8(truncatingIfNeeded: word >> 8)
                    out[written + 1] = UInt8(truncatingIfNeeded: word)
                }
                return true
            }
        }
        return valid ? output : nil
    }

    /// Decodes base64url bytes.
    static func decode(_ text: some Collection<UInt8>) -> Data? {
        let bytes = Array(text)
        return bytes.withUnsafeBufferPointer { decode($0) }
    }

    /// Decodes base64url text.
    static func decode(_ text: Substring) -> Data? { decode(text.utf8) }

    /// Encodes bytes as base64url without padding.
    static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
