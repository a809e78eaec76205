import Foundation

/// Where a compact JWS (`header.payload.signature`) splits: its two dots, found with `memchr` in the text's own bytes
/// (JWS are ASCII, and a notification's header alone is ~4 KiB of `x5c`). Shared by every reader of JWS text, so
/// that none splits differently.
enum CompactSegments {
    /// The offsets of the two dots in `bytes`, or `nil` unless there are exactly two.
    static func dots(in bytes: UnsafeBufferPointer<UInt8>) -> (first: Int, second: Int)? {
        guard let base = bytes.baseAddress else { return nil }
        func dot(from start: Int) -> Int? {
            guard start < bytes.count, let found = memchr(base + start, Int32(UInt8(ascii: ".")), bytes.count - start) else { return nil }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
        guard let first = dot(from: 0), let second = dot(from: first + 1), dot(from: second + 1) == nil else { return nil }
        return (first, second)
    }
}
