import Foundation
import HTTPAPI
import Synchronization

/// `storekeeper dev`'s clock: the real time plus an offset that only grows (`simulate advance`). Every component of
/// the dev process reads it, as tests read their pinned clocks.
public final class DevClock: AdjustableClock {
    /// Milliseconds added to the real time.
    private let offset = Atomic<Int64>(0)

    public init() {}

    public func now() -> Date { Date().addingTimeInterval(Double(offset.load(ordering: .relaxed)) / 1000) }

    public func advance(by seconds: TimeInterval) -> Date {
        offset.add(Int64((seconds * 1000).rounded()), ordering: .relaxed)
        return now()
    }
}
