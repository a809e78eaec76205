import Foundation

extension UUID {
    /// A random (version 4) id from the system's generator. `UUID()` opens, reads and closes /dev/urandom on Linux:
    /// three system calls, 6.3 µs a call on the 2-core reference machine against 1.9 µs for this one's `getrandom`, for
    /// every hold. (Foundation's own `UUID.random(using:)` needs Foundation 6.3, newer than the package's minimum.)
    public static func systemRandom() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // RFC 9562 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}
