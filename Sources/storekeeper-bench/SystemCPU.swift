import Foundation
import StorekeeperRuntime

/// The CPU seconds the processes of an end-to-end run have used so far — its `serve`s, its `work`s and the PostgreSQL
/// server when it runs on this machine — so that a phase is also told by what each notification cost: on a machine
/// whose pace swings by a fifth from one run to the next, the CPU a notification costs moves far less than the
/// notifications a second do, and their sum against the machine's cores is the rate the run can reach at most.
struct SystemCPU: Sendable {
    var serve: Double
    var work: Double
    /// `nil` when the server runs elsewhere.
    var database: Double?

    /// The CPU used so far by `system`'s processes and the server whose postmaster is `postmaster`; a process not
    /// started yet counts nothing.
    static func used(by system: SystemUnderTest, postmaster: Int32?) -> SystemCPU {
        let seconds = { (processes: [ChildProcess.Running]) in
            processes.reduce(0) { $0 + (ChildProcess.cpuTimes(of: $1.pid)?.seconds ?? 0) }
        }
        return SystemCPU(
            serve: seconds([system.serve].compactMap { $0 } + system.additionalServes.map(\.process)), work: seconds(system.workers),
            database: postmaster.map(ProcessCPU.seconds(ofProcessAndChildren:)))
    }

    /// What each process used from `earlier` to this, in microseconds for each of `count` notifications.
    func microseconds(since earlier: SystemCPU, per count: Int) -> SystemCPU {
        let scale = 1e6 / Double(max(count, 1))
        return SystemCPU(
            serve: (serve - earlier.serve) * scale, work: (work - earlier.work) * scale,
            database: database.flatMap { now in earlier.database.map { (now - $0) * scale } })
    }

    var total: Double { serve + work + (database ?? 0) }

    /// `serve 412 + work 0 + PostgreSQL 180 = 592 µs`.
    var described: String {
        let figure = { (value: Double) in String(Int(value.rounded())) }
        return "serve \(figure(serve)) + work \(figure(work))" + (database.map { " + PostgreSQL \(figure($0))" } ?? "") + " = \(figure(total)) µs"
    }
}
