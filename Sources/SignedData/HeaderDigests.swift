import Crypto
import Foundation
import Synchronization

/// The SHA-256 digests of JWS headers seen lately, with their text, for ``SignedParts``: a header is 4–5 KB (its `x5c`
/// chain) and the same few for months, so a notification's three are hashed once, not at every intake (they were
/// about a fifth of what splitting a notification into its parts cost `serve`).
final class HeaderDigests: Sendable {
    private let known = Mutex<[HeaderBytes: (text: String, digest: Data)]>([:])
    private let capacity: Int

    /// - Parameter capacity: distinct headers kept; when full, all are forgotten (Apple signs with one leaf at a time).
    init(capacity: Int = 32) {
        self.capacity = capacity
    }

    /// `header`'s text and SHA-256 digest.
    func digest(of header: UnsafeBufferPointer<UInt8>) -> (text: String, digest: Data) {
        let key = HeaderBytes(bytes: Data(buffer: header))
        if let known = known.withLock({ $0[key] }) { return known }
        let entry = (text: String(decoding: header, as: UTF8.self), digest: Data(SHA256.hash(data: UnsafeRawBufferPointer(header))))
        known.withLock { known in
            if known.count >= capacity { known.removeAll(keepingCapacity: true) }
            known[key] = entry
        }
        return entry
    }
}
