import Foundation
import NIOCore
import SignedData

extension SignedParts {
    /// The value of `notifications.signed_parts`: the encoding, compressed.
    public func storedValue() throws -> ByteBuffer { try CompressedColumn.compress(encoded) }

    /// Parts from a `notifications.signed_parts` value.
    public init(storedValue: ByteBuffer) throws {
        guard let parts = SignedParts(encoded: Data((try? CompressedColumn.decompress(storedValue))?.readableBytesView ?? [])) else {
            throw PersistenceError(.corruptRecord, "stored signed parts do not decode")
        }
        self = parts
    }
}
