import Crypto
import Foundation
import Synchronization

/// The SHA-256 digests of JWS headers seen lately, with their text, for ``SignedParts``: the digest is the key a
/// header is stored under, once (``SignedParts/headers``). A header is 4–5 KB (its `x5c` chain) and the same few for
/// months, so a notification's three are hashed once a process, not at every intake (they were about a fifth of what
/// splitting a notification into its parts cost `serve`).
final class HeaderDigests: Sendable {
    typealias Entry = (text: String, digest: Data)

    private struct State {
        var entries: [HeaderBytes: Entry] = [:]
        /// How many headers were hashed: what the cache did not find.
        var hashed = 0
    }

    private let state = Mutex(State())
    private let capacity: Int

    /// - Parameter capacity: distinct headers kept, at least 1; when full, all are forgotten (Apple signs with one leaf
    ///   at a time, so a full cache means headers that do not repeat, not a working set).
    init(capacity: Int = 32) {
        precondition(capacity > 0, "a header digest cache keeps at least one header")
        self.capacity = capacity
    }

    /// `header`'s text and SHA-256 digest.
    func digest(of header: UnsafeBufferPointer<UInt8>) -> Entry {
        // The key is a copy of the header (4–5 KB): it outlives the caller's buffer.
        let key = HeaderBytes(bytes: Data(buffer: header))
        if let found = state.withLock({ $0.entries[key] }) { return found }
        let entry = (text: String(decoding: header, as: UTF8.self), digest: Data(SHA256.hash(data: UnsafeRawBufferPointer(header))))
        state.withLock { state in
            state.hashed += 1
            if state.entries[key] == nil, state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = entry
        }
        return entry
    }

    /// How many headers are kept, and how many were hashed so far (for tests).
    var counts: (kept: Int, hashed: Int) { state.withLock { ($0.entries.count, $0.hashed) } }
}
