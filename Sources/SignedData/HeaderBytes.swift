import Foundation

/// A JWS header's bytes as a dictionary key: hashes only the length and the last 32 bytes (cheap for 4 KiB headers,
/// where hashing them all costs about what a SHA-256 of them does), while equality still compares every byte — so a
/// hit is always the exact same header. The headers of App Store payloads are a few chains for months.
struct HeaderBytes: Hashable, Sendable {
    let bytes: Data

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.suffix(32).withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (lhs: HeaderBytes, rhs: HeaderBytes) -> Bool { lhs.bytes == rhs.bytes }
}
