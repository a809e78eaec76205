import Dispatch

/// A repeating dispatch timer for a process-wide sweep, which runs only while started.
///
/// Not synchronised on its own: its owner starts and stops it under the owner's lock, so a start and a stop never
/// cross (a dispatch source resumed more often than it was suspended ends the process).
final class SweepTimer: @unchecked Sendable {  // the source is thread-safe; `isRunning` is guarded by the owner's lock
    private let source: any DispatchSourceTimer
    /// Whether the timer is ticking.
    private(set) var isRunning = false

    /// A stopped timer that, once started, calls the handler given to ``onTick(_:)`` every `interval`, up to `leeway`
    /// late (which lets the system wake for it and other timers at once).
    init(interval: Duration, leeway: Duration) {
        source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + interval.dispatchInterval, repeating: interval.dispatchInterval, leeway: leeway.dispatchInterval)
    }

    /// What each tick does; set before the first ``start()``.
    func onTick(_ handler: @escaping @Sendable () -> Void) { source.setEventHandler(handler: handler) }

    /// Starts ticking, unless it is already.
    func start() {
        guard !isRunning else { return }
        isRunning = true
        source.resume()
    }

    /// Stops ticking, unless it is stopped already.
    func stop() {
        guard isRunning else { return }
        isRunning = false
        source.suspend()
    }

    deinit {
        // A dispatch source may not be released while suspended, nor while inactive (never resumed): cancelled first
        // so that no tick runs, it is then resumed to end.
        source.cancel()
        if !isRunning { source.resume() }
    }
}
