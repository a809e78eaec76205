import Crypto
import Foundation
import Synchronization

/// Leaf keys of chains that already validated to a configured root, keyed by the exact `x5c[0]` and `x5c[1]` text.
///
/// A hit lets a payload signed by a known chain cost one P-256 signature check instead of a certificate parse and
/// two P-384 chain checks. It is sound: everything `RFC5280Policy` and ``AppleChainPolicy`` check depends only on the
/// certificate bytes (the same bytes give the same verdict) except validity, so an entry remembers the window in
/// which *every* certificate of the chain was valid, and only a validation time inside that window is a hit.
final class VerifiedChainCache: Sendable {
    struct Entry: Sendable {
        let leafKey: P256.Signing.PublicKey
        /// The intersection of the leaf's, the intermediate's and the root's validity periods.
        let validity: ClosedRange<Date>
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let capacity: Int

    /// - Parameter capacity: distinct chains kept; Apple signs with one leaf at a time, so a few suffice. `0` disables.
    init(capacity: Int = 32) {
        self.capacity = capacity
    }

    static func key(leaf: String, intermediate: String) -> String { leaf + "|" + intermediate }

    /// The cached leaf key, if this exact chain validated before and `time` lies inside its validity window.
    func leafKey(for key: String, at time: Date) -> P256.Signing.PublicKey? {
        guard capacity > 0, let entry = entries.withLock({ $0[key] }), entry.validity.contains(time) else { return nil }
        return entry.leafKey
    }

    func remember(_ entry: Entry, for key: String) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
