import Foundation

/// A settable clock for tests that inject "now".
public final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date

    public init(_ start: Date = Date()) { value = start }

    public var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
