import Dispatch
import Synchronization

/// One timer for the long deadlines of the process: each ``DeadlineTimer`` of a second or more is an entry here, and a
/// sweep every tick (20 ms for ``shared``) fires those that are due.
///
/// Every request and job runs under a deadline (``withDeadline(_:_:)``) that almost never fires. A dispatch timer of
/// its own costs two wake-ups of libdispatch's manager thread, each a `write` to its event fd (one to arm it, one to
/// cancel it), the manager's work on its timer heap, and a worker thread woken to finish the cancel: in a profile of
/// `serve` taking in notifications, about a tenth of its CPU (docs/capacity.md, "One timer for every long deadline").
/// An entry here costs a lock and two dictionary inserts and removals. A deadline fires up to two ticks late (its
/// slot's start, then the sweep after it), which nothing measured in seconds minds; shorter deadlines keep a timer of
/// their own.
///
/// Entries wait in slots, one a tick, so that a sweep looks at the slots, not at every entry (a stalled database
/// leaves thousands waiting). The timer stops after ``idleSweeps`` sweeps in a row found nothing waiting, and the next
/// entry starts it again, both under the lock.
package final class DeadlineSweep: Sendable {
    /// The process's sweep.
    package static let shared = DeadlineSweep(tick: .milliseconds(20))

    /// Sweeps in a row with nothing waiting before the timer stops: under load entries come all the time, and a lone
    /// deadline (an idle worker's claim each second) keeps it ticking only a few times.
    static let idleSweeps = 3

    private struct State {
        var next = 0
        /// The slot of each waiting entry's token.
        var slots: [Int: UInt64] = [:]
        /// The entries due in each slot (a slot `n` is due from `n` ticks after the clock's origin), by token.
        var due: [UInt64: [Int: @Sendable () -> Void]] = [:]
        var emptySweeps = 0
    }

    /// How often the timer looks at the entries while any wait, in nanoseconds.
    private let tickNanoseconds: UInt64
    private let state = Mutex(State())
    private let timer: SweepTimer  // started and stopped under `state`'s lock

    /// A sweep of its own (tests); the process shares ``shared``.
    init(tick: Duration) {
        tickNanoseconds = UInt64(max(tick.nanoseconds, 1))
        timer = SweepTimer(interval: tick, leeway: tick / 4)
        timer.onTick { [weak self] in self?.sweep() }
    }

    /// Calls `fire` once, `timeout` from now or up to two ticks later (never sooner), unless ``remove(_:)`` comes
    /// first.
    func add(after timeout: Duration, _ fire: @escaping @Sendable () -> Void) -> Int {
        let due = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(timeout.nanoseconds, 0))
        // The first slot that starts at or after `due`.
        let slot = due / tickNanoseconds + (due % tickNanoseconds == 0 ? 0 : 1)
        return state.withLock { state in
            let token = state.next
            state.next &+= 1
            state.slots[token] = slot
            state.due[slot, default: [:]][token] = fire
            state.emptySweeps = 0
            timer.start()
            return token
        }
    }

    /// Forgets the entry `token`: its `fire` is not called, unless a sweep took it already.
    func remove(_ token: Int) {
        state.withLock { state in
            guard let slot = state.slots.removeValue(forKey: token) else { return }
            state.due[slot]?[token] = nil
            if state.due[slot]?.isEmpty == true { state.due[slot] = nil }
        }
    }

    /// How many entries wait.
    var waiting: Int { state.withLock { $0.slots.count } }

    /// Whether the timer is ticking.
    var isRunning: Bool { state.withLock { _ in timer.isRunning } }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds / tickNanoseconds
        let due = state.withLock { state -> [@Sendable () -> Void] in
            var due: [@Sendable () -> Void] = []
            for slot in state.due.keys.filter({ $0 <= now }) {
                for (token, fire) in state.due.removeValue(forKey: slot) ?? [:] {
                    state.slots[token] = nil
                    due.append(fire)
                }
            }
            if !state.slots.isEmpty {
                state.emptySweeps = 0
            } else {
                state.emptySweeps += 1
                if state.emptySweeps >= Self.idleSweeps { timer.stop() }
            }
            return due
        }
        // Each on a thread of the pool: one slow handler (a cancelled operation's) does not hold up the others or the
        // next tick.
        for fire in due { DispatchQueue.global().async(execute: fire) }
    }
}
