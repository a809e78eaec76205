import Crypto
import Foundation
import Synchronization

/// Leaf keys of chains that already validated to a configured root, keyed by the exact JWS header text (the same
/// text is the same `alg` and the same `x5c`).
///
/// A hit lets a payload signed by a known chain cost one P-256 signature check instead of a certificate parse and
/// two P-384 chain checks. It is sound: everything `RFC5280Policy` and ``AppleChainPolicy`` check depends only on the
/// certificate bytes (the same bytes give the same verdict) except validity, so an entry remembers the window in
/// which *every* certificate of the chain was valid, and only a validation time inside that window is a hit.
final class VerifiedChainCache: Sendable {
    struct Entry: Sendable {
        let leafKey: P256.Signing.PublicKey
        /// SHA-256 state after `<header>.` — every signing input of this header starts with it.
        let headerDigest: SHA256
        /// The intersection of the leaf's, the intermediate's and the root's validity periods.
        let validity: ClosedRange<Date>
        /// Online mode: OCSP answers are trusted for 15 minutes, then the chain is checked again.
        let trustedUntil: Date
    }

    private let entries = Mutex<[HeaderBytes: Entry]>([:])
    private let capacity: Int

    /// - Parameter capacity: distinct chains kept; Apple signs with one leaf at a time, so a few suffice. `0` disables.
    init(capacity: Int = 32) {
        self.capacity = capacity
    }

    /// The cached entry, if this exact chain validated before, `time` lies inside its validity window, and (online)
    /// its revocation check is still fresh at `now`.
    func entry(for key: Data, at time: Date, now: Date) -> Entry? {
        guard capacity > 0, let entry = entries.withLock({ $0[HeaderBytes(bytes: key)] }), entry.validity.contains(time),
            now < entry.trustedUntil
        else {
            return nil
        }
        return entry
    }

    func remember(_ entry: Entry, for key: Data) {
        guard capacity > 0 else { return }
        // The header alone (`key` may be a slice of the whole payload, which the entry would otherwise keep alive).
        let stored = HeaderBytes(bytes: Data(key))
        entries.withLock { entries in
            if entries.count >= capacity, entries[stored] == nil { entries.removeAll(keepingCapacity: true) }
            entries[stored] = entry
        }
    }
}
