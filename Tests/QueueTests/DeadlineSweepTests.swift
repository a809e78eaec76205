import Dispatch
import Synchronization
import Testing

@testable import IntegrationSupport
@testable import StatementFencing

@Suite("Deadlines kept by one timer")
struct DeadlineSweepTests {
    /// When each entry of a test fired, by name.
    final class Fired: Sendable {
        private let log = Mutex<[String: [UInt64]]>([:])
        func record(_ name: String) { log.withLock { $0[name, default: []].append(DispatchTime.now().uptimeNanoseconds) } }
        func times(of name: String) -> [UInt64] { log.withLock { $0[name] ?? [] } }
        var count: Int { log.withLock { $0.values.map(\.count).reduce(0, +) } }
    }

    @Test("an entry fires once and not before it is due; a removed one never fires")
    func firesWhenDue() async throws {
        let sweep = DeadlineSweep(tick: .milliseconds(5))
        let fired = Fired()
        let start = DispatchTime.now().uptimeNanoseconds
        // Removed long before it would be due, however slow this machine is at the moment.
        let removed = sweep.add(after: .seconds(60)) { fired.record("removed") }
        _ = sweep.add(after: .milliseconds(60)) { fired.record("due") }
        _ = sweep.add(after: .milliseconds(120)) { fired.record("later") }
        sweep.remove(removed)
        try await eventually("both kept entries fired") { fired.count == 2 }
        // Once the timer has stopped, nothing waiting is left to fire.
        try await eventually("the timer stopped") { !sweep.isRunning }
        #expect(fired.times(of: "due").count == 1)
        #expect(fired.times(of: "due").allSatisfy { $0 >= start + 60_000_000 })
        #expect(fired.times(of: "later").count == 1)
        #expect(fired.times(of: "later").allSatisfy { $0 >= start + 120_000_000 })
        #expect(fired.times(of: "removed").isEmpty)
        #expect(sweep.waiting == 0)
    }

    @Test("the timer stops once nothing has waited for a while, and starts again for the next entry")
    func stopsAndStarts() async throws {
        let sweep = DeadlineSweep(tick: .milliseconds(2))
        let fired = Fired()
        #expect(!sweep.isRunning)
        for round in 0..<5 {
            _ = sweep.add(after: .milliseconds(10)) { fired.record("\(round)") }
            try await eventually("entry \(round) fired") { fired.times(of: "\(round)").count == 1 }
            try await eventually("the timer stopped after entry \(round)") { !sweep.isRunning }
        }
        #expect(fired.count == 5)
        // One never started ends cleanly too (libdispatch ends the process on releasing an inactive source).
        _ = DeadlineSweep(tick: .milliseconds(5))
    }

    @Test("entries added and removed from many tasks at once: each kept one fires once, no removed one fires")
    func manyAtOnce() async throws {
        let sweep = DeadlineSweep(tick: .milliseconds(1))
        let fired = Fired()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for entry in 0..<2_000 {
                        let name = "\(task):\(entry)"
                        // Kept entries are due within 2 ms; removed ones would be in a minute, so each removal comes first.
                        let kept = entry.isMultiple(of: 2)
                        let token = sweep.add(after: kept ? .microseconds(entry % 7 * 300) : .seconds(60)) { fired.record(name) }
                        if !kept { sweep.remove(token) }
                        if entry.isMultiple(of: 100) { await Task.yield() }
                    }
                }
            }
        }
        try await eventually("every kept entry fired") { fired.count >= 8_000 }
        try await eventually("the timer stopped") { !sweep.isRunning }
        #expect(sweep.waiting == 0)
        #expect(fired.count == 8_000)
        for task in 0..<8 {
            for entry in 0..<2_000 { #expect(fired.times(of: "\(task):\(entry)").count == (entry.isMultiple(of: 2) ? 1 : 0)) }
        }
    }

    @Test("a deadline timer waits in the sweep from a second on, has a timer of its own below, and leaves when cancelled")
    func deadlineTimerPlaces() async throws {
        let sweep = DeadlineSweep(tick: .milliseconds(5))
        let fired = Fired()
        let short = DeadlineTimer(after: .milliseconds(999), sweep: sweep) { fired.record("short") }
        #expect(sweep.waiting == 0)
        let long = DeadlineTimer(after: .seconds(60), sweep: sweep) { fired.record("long") }
        #expect(sweep.waiting == 1)
        let own = DeadlineTimer(after: .seconds(5), sweep: nil) { fired.record("own") }
        #expect(sweep.waiting == 1)
        long.cancel()
        #expect(sweep.waiting == 0)
        own.cancel()
        try await eventually("the short timer fired on its own") { fired.times(of: "short").count == 1 }
        try await eventually("the timer stopped") { !sweep.isRunning }
        #expect(fired.times(of: "long").isEmpty)
        let swept = DeadlineTimer(after: .seconds(1), sweep: sweep) { fired.record("swept") }
        // Exactly a second waits in the sweep (unless this thread stalled for that second and it fired already).
        #expect(sweep.waiting == 1 || !fired.times(of: "swept").isEmpty)
        try await eventually("the swept timer fired") { fired.times(of: "swept").count == 1 }
        swept.cancel()
        short.cancel()
        #expect(fired.times(of: "own").isEmpty)
    }

    @Test(
        "withDeadline of a second or more: an operation that outlasts it fails with DeadlineExceeded, logged as \"not answered within its deadline\", and is cancelled"
    )
    func longDeadline() async throws {
        let cancelled = Mutex(false)
        let start = ContinuousClock.now
        let error = await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.seconds(1)) {
                do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.withLock { $0 = true } }
            }
        }
        // As logs show it (`String(reflecting:)`): in words.
        #expect(error.map { String(reflecting: $0) } == "not answered within its deadline")
        #expect(ContinuousClock.now - start >= .seconds(1))
        try await eventually("the operation was cancelled") { cancelled.withLock { $0 } }
        #expect(try await withDeadline(.seconds(1)) { 42 } == 42)
    }

    @Test("withDeadline: a cancelled caller stops waiting at once, and the operation left behind is still cancelled at the deadline")
    func cancelledCaller() async throws {
        let started = Mutex(false)
        let cancelledAfter = Mutex<Duration?>(nil)
        let start = ContinuousClock.now
        let caller = Task {
            try await withDeadline(.seconds(3)) {
                started.withLock { $0 = true }
                // An operation that would hang for half a minute unless cancelled (a statement on a stalled database).
                do { try await Task.sleep(for: .seconds(30)) } catch { cancelledAfter.withLock { $0 = ContinuousClock.now - start } }
            }
        }
        try await eventually("the operation to start") { started.withLock { $0 } }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(ContinuousClock.now - start < .seconds(3), "the cancelled caller waited for the deadline")
        #expect(cancelledAfter.withLock { $0 } == nil, "the caller's cancellation reached the operation")
        try await eventually(timeout: .seconds(10), "the operation left behind to be cancelled at its deadline") {
            cancelledAfter.withLock { $0 } != nil
        }
        #expect(try #require(cancelledAfter.withLock { $0 }) >= .seconds(3))
    }

    @Test("durations beyond Int64 nanoseconds saturate instead of trapping")
    func hugeDurations() {
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
        #expect(Duration.seconds(Int64.min).nanoseconds == .min)
        #expect(Duration.milliseconds(1_500).nanoseconds == 1_500_000_000)
        #expect(Duration.nanoseconds(-7).nanoseconds == -7)
    }
}
