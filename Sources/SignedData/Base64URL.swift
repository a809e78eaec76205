import Foundation

/// base64url without padding, as used for JWS segments (RFC 7515 §2).
enum Base64URL {
    /// Four tables, one per position in a 4-character group, each holding the character's 6 bits already shifted
    /// into place; bytes outside the URL-safe alphabet map to bit 24, so one OR of four lookups decodes a group and
    /// one comparison checks it.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: invalid, count: 4 * 256)
        for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            for position in 0..<4 {
                tables[position * 256 + Int(character)] = UInt32(value) << (6 * (3 - position))
            }
        }
        return tables
    }()
    private static let invalid: UInt32 = 1 << 24

    /// Decodes base64url bytes in one pass. Trailing `=` padding is tolerated; any other byte outside the URL-safe
    /// alphabet, an impossible length, or non-zero leftover bits give `nil`.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> Data? {
        var count = input.count
        while count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        guard count % 4 != 1 else { return nil }
        let outputCount = count * 3 / 4
        // One spare byte: each group is stored as 4 bytes, the fourth overwritten by the next group or cut off.
        var output = Data(count: outputCount + 1)
        let valid = tables.withUnsafeBufferPointer { tables in
            output.withUnsafeMutableBytes { (out: UnsafeMutableRawBufferPointer) -> Bool in
                var written = 0
                var index = 0
                var invalidBits: UInt32 = 0
                while index + 4 <= count {
                    let group =
                        tables[Int(input[index])] | tables[256 + Int(input[index + 1])]
                        | tables[512 + Int(input[index + 2])] | tables[768 + Int(input[index + 3])]
                    invalidBits |= group
                    out.storeBytes(of: (group << 8).bigEndian, toByteOffset: written, as: UInt32.self)
                    written += 3
                    index += 4
                }
                guard invalidBits & invalid == 0 else { return false }
                let rest = count - index
                guard rest > 0 else { return true }
                var group: UInt32 = 0
                for offset in 0..<rest { group |= tables[offset * 256 + Int(input[index + offset])] }
                guard group & invalid == 0 else { return false }
                // 2 characters carry 1 byte (+4 zero bits), 3 carry 2 bytes (+2 zero bits).
                let bytes = rest - 1
                guard group & ((1 << (24 - 8 * bytes)) - 1) == 0 else { return false }
                for byte in 0..<bytes { out[written + byte] = UInt8(truncatingIfNeeded: group >> (16 - 8 * byte)) }
                return true
            }
        }
        guard valid else { return nil }
        output.count = outputCount
        return output
    }

    /// Decodes base64url bytes.
    static func decode(_ text: some Collection<UInt8>) -> Data? {
        let bytes = Array(text)
        return bytes.withUnsafeBufferPointer { decode($0) }
    }

    /// Decodes base64url text.
    static func decode(_ text: Substring) -> Data? { decode(text.utf8) }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes bytes as base64url without padding.
    static func encode(_ bytes: some DataProtocol) -> String {
        var output: [UInt8] = []
        encode(Data(bytes), into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `bytes` as base64url without padding to `output`, in one pass over buffers sized up front (the check
    /// that a stored payload joins back to what was received encodes every notification's bodies again).
    static func encode(_ bytes: Data, into output: inout [UInt8]) {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: (bytes.count * 4 + 2) / 3))
        alphabet.withUnsafeBufferPointer { alphabet in
            bytes.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
                output.withUnsafeMutableBufferPointer { output in
                    var index = 0
                    var written = start
                    while index + 3 <= input.count {
                        let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                        output[written] = alphabet[Int(group >> 18)]
                        output[written + 1] = alphabet[Int(group >> 12 & 63)]
                        output[written + 2] = alphabet[Int(group >> 6 & 63)]
                        output[written + 3] = alphabet[Int(group & 63)]
                        index += 3
                        written += 4
                    }
                    let rest = input.count - index
                    guard rest > 0 else { return }
                    let group = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    output[written] = alphabet[Int(group >> 18)]
                    output[written + 1] = alphabet[Int(group >> 12 & 63)]
                    if rest == 2 { output[written + 2] = alphabet[Int(group >> 6 & 63)] }
                }
            }
        }
    }
}
