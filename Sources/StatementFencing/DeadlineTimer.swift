import Dispatch

/// A one-shot timer that can be cancelled, releasing it at once: an entry of a ``DeadlineSweep`` for a second or more,
/// a dispatch timer of its own below that.
package final class DeadlineTimer: @unchecked Sendable {  // a dispatch source is thread-safe, the sweep too
    private enum Registration {
        case swept(DeadlineSweep, token: Int)
        case own(any DispatchSourceTimer)
    }

    /// Deadlines from this long on are kept by the sweep, whose tick they can spare.
    static let sweptFrom: Duration = .seconds(1)

    private let registration: Registration

    /// Calls `handler` once, `timeout` from now, unless ``cancel()`` comes first.
    /// - Parameter sweep: where a deadline of a second or more waits; `nil` gives every deadline a timer of its own
    ///   (a wait of an idle loop, which would keep the sweep ticking while nothing else waits).
    package init(after timeout: Duration, sweep: DeadlineSweep? = .shared, _ handler: @escaping @Sendable () -> Void) {
        if let sweep, timeout >= Self.sweptFrom {
            registration = .swept(sweep, token: sweep.add(after: timeout, handler))
            return
        }
        let source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + timeout.dispatchInterval)
        source.setEventHandler(handler: handler)
        source.resume()
        registration = .own(source)
    }

    /// Stops the timer: its handler does not run, unless it has started already — or, for a deadline of the sweep,
    /// the sweep has taken it and handed it to a thread (``withDeadline(_:_:)``'s first outcome wins either way).
    package func cancel() {
        switch registration {
        case .swept(let sweep, let token): sweep.remove(token)
        case .own(let source): source.cancel()
        }
    }
}
