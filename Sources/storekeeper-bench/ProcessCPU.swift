import Foundation
import StorekeeperRuntime

/// CPU time used by processes of this machine (`/proc/<pid>/stat`), to set what a phase cost beside what it did: on
/// a machine whose pace swings by a fifth from one phase to the next, the CPU a request costs `serve` and PostgreSQL
/// moves far less than the requests a second do.
enum ProcessCPU {
    /// Whether `pid` runs PostgreSQL's server program.
    static func isPostgres(_ pid: Int32) -> Bool {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.hasPrefix("postgres") == true
    }

    /// The postmaster of the server `system`'s database is on, when it runs on this machine: the parent of its
    /// checkpointer, which lives as long as the server, when both are `postgres` processes here (a pid of a server
    /// elsewhere names nothing, or something else, here).
    static func postmaster(of system: SystemUnderTest) async throws -> Int32? {
        let checkpointer = Int32(try await system.count("SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE backend_type = 'checkpointer'"))
        guard checkpointer > 0, isPostgres(checkpointer), let parent = ChildProcess.cpuTimes(of: checkpointer)?.parent, isPostgres(parent)
        else { return nil }
        return parent
    }

    /// The CPU seconds of `parent` and of its children (a PostgreSQL server: the postmaster and every backend and helper
    /// it started), those that ended and were waited for included.
    static func seconds(ofProcessAndChildren parent: Int32) -> Double {
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
        return pids.reduce(0) { total, pid in
            guard let stat = ChildProcess.cpuTimes(of: pid) else { return total }
            if pid == parent { return total + stat.seconds + stat.endedChildren }
            return stat.parent == parent ? total + stat.seconds : total
        }
    }
}

/// The CPU a load phase cost `serve` and the PostgreSQL server, when both run on this machine, over the seconds whose
/// requests the phase counts.
struct PhaseCPU: Sendable {
    var serve: Double
    var database: Double

    /// Read at the start and the end of the counted part of `body`'s phase — after `warmUp`, for `seconds` — of
    /// `serve`'s process and of the server whose postmaster is `postmaster`.
    static func measure(
        serve: Int32?, postmaster: Int32?, warmUp: Duration, seconds: Duration, _ body: () async throws -> LoadPhase
    ) async throws -> LoadPhase {
        guard let serve, let postmaster else { return try await body() }
        @Sendable func now() -> PhaseCPU? {
            ChildProcess.cpuTimes(of: serve).map { PhaseCPU(serve: $0.seconds, database: ProcessCPU.seconds(ofProcessAndChildren: postmaster)) }
        }
        let clock = ContinuousClock()
        let start = clock.now
        async let window: (PhaseCPU?, PhaseCPU?) = {
            try? await Task.sleep(until: start + warmUp, clock: clock)
            let first = now()
            try? await Task.sleep(until: start + warmUp + seconds, clock: clock)
            return (first, now())
        }()
        var phase = try await body()
        if case (let before?, let after?) = await window {
            phase.cpu = PhaseCPU(serve: after.serve - before.serve, database: after.database - before.database)
        }
        return phase
    }

    /// Microseconds a request answered in the counted seconds.
    func microsecondsPerRequest(_ phase: LoadPhase) -> (serve: Double, database: Double) {
        let requests = Double(max(phase.answered, 1))
        return (serve / requests * 1e6, database / requests * 1e6)
    }
}
