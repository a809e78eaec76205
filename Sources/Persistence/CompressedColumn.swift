import CompressNIO
import NIOCore

/// Values compressed before they are stored. PostgreSQL compresses only rows above about 2 KB, and a notification's
/// signed parts and an event's body are 1–2 KB of JSON: raw deflate halves them.
enum CompressedColumn {
    /// More than any value stored compresses from: a corrupted value cannot make a reader allocate without bound.
    static let maximumSize = 8 << 20

    static func compress(_ bytes: some Sequence<UInt8>) throws -> ByteBuffer {
        var buffer = ByteBuffer(bytes: bytes)
        return try buffer.compress(with: .deflate())
    }

    static func decompress(_ stored: ByteBuffer) throws -> ByteBuffer {
        var buffer = stored
        return try buffer.decompress(with: .deflate(), maxSize: maximumSize)
    }
}
