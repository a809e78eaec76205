import Foundation
import HTTPAPI
import Synchronization

/// `storekeeper dev`'s clock: the real time plus an offset that only grows (`simulate advance`). Every component of
/// the dev process reads it, as tests read their pinned clocks.
public final class DevClock: AdjustableClock {
    /// Milliseconds added to the real time.
    private let milliseconds = Atomic<Int64>(0)

    /// - Parameter offsetMilliseconds: how far ahead of the real time it starts (the offset a database kept).
    public init(offsetMilliseconds: Int64 = 0) { milliseconds.store(max(0, offsetMilliseconds), ordering: .relaxed) }

    public func now() -> Date { Date().addingTimeInterval(offset) }

    /// How far the dev clock is ahead of the real time, in seconds.
    public var offset: TimeInterval { Double(offsetMilliseconds) / 1000 }

    /// How far the dev clock is ahead of the real time, in milliseconds.
    public var offsetMilliseconds: Int64 { milliseconds.load(ordering: .relaxed) }

    public func advance(by seconds: TimeInterval) -> Date {
        milliseconds.add(Int64((seconds * 1000).rounded()), ordering: .relaxed)
        return now()
    }
}
