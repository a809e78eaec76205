import Foundation

/// A JWS header's bytes as a dictionary key: hashes only the length and 32 bytes (cheap for 4 KiB headers, where
/// hashing them all costs about what a SHA-256 of them does), while equality still compares every byte — so a hit is
/// always the exact same header. The 32 are bytes 48–79 where the header is that long: in an `x5c` header they encode
/// the start of the leaf certificate, its serial number among them, which differs from chain to chain (the last bytes,
/// the root's end and `"]}`, are the same in every App Store header). The headers of App Store payloads are a few
/// chains for months.
struct HeaderBytes: Hashable, Sendable {
    let bytes: Data

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        let start = bytes.startIndex + Swift.max(0, Swift.min(48, bytes.count - 32))
        bytes[start..<Swift.min(start + 32, bytes.endIndex)].withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (lhs: HeaderBytes, rhs: HeaderBytes) -> Bool { lhs.bytes == rhs.bytes }
}
