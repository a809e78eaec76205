import Foundation
import HTTPAPI
import Synchronization

/// `storekeeper dev`'s clock: the real time plus an offset that only grows (`simulate advance`). Every component of
/// the dev process reads it, as tests read their pinned clocks.
public final class DevClock: AdjustableClock {
    /// Milliseconds added to the real time.
    private let milliseconds = Atomic<Int64>(0)

    public init() {}

    public func now() -> Date { Date().addingTimeInterval(offset) }

    /// How far the dev clock is ahead of the real time, in seconds.
    public var offset: TimeInterval { Double(milliseconds.load(ordering: .relaxed)) / 1000 }

    public func advance(by seconds: TimeInterval) -> Date {
        milliseconds.add(Int64((seconds * 1000).rounded()), ordering: .relaxed)
        return now()
    }
}
