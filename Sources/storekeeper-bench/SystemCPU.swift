import Foundation
import StorekeeperRuntime

/// The CPU seconds the processes of an end-to-end run have used so far — its `serve`s, its `work`s and the PostgreSQL
/// server when it runs on this machine — so that a phase is also told by what each notification cost: where the time
/// goes, and, against the machine's cores, the most the run could have reached (a rate target is then a CPU budget).
struct SystemCPU: Sendable {
    var serve: Double
    var work: Double
    /// `nil` when the server runs elsewhere.
    var database: Double?

    /// The CPU used so far by `system`'s processes and the server whose postmaster is `postmaster`. A process counts
    /// from its start (one not started yet counts nothing); what its start costs counts where it falls.
    static func used(by system: SystemUnderTest, postmaster: Int32?) -> SystemCPU {
        let seconds = { (processes: [ChildProcess.Running]) in processes.reduce(0) { $0 + ($1.cpuSeconds ?? 0) } }
        return SystemCPU(
            serve: seconds([system.serve].compactMap { $0 } + system.additionalServes.map(\.process)), work: seconds(system.workers),
            database: postmaster.map(ProcessCPU.seconds(ofProcessAndChildren:)))
    }

    /// What each process used from `earlier` to this, shared over `count` notifications.
    func cost(since earlier: SystemCPU, per count: Int) -> Cost {
        let scale = 1e6 / Double(max(count, 1))
        return Cost(
            serve: (serve - earlier.serve) * scale, work: (work - earlier.work) * scale,
            database: database.flatMap { now in earlier.database.map { (now - $0) * scale } })
    }

    /// Microseconds of CPU a notification, by process.
    struct Cost: Sendable {
        var serve: Double
        var work: Double
        /// `nil` when the server runs elsewhere.
        var database: Double?

        /// All three; PostgreSQL's only when it runs on this machine.
        var total: Double { serve + work + (database ?? 0) }

        static func + (left: Cost, right: Cost) -> Cost {
            Cost(
                serve: left.serve + right.serve, work: left.work + right.work,
                database: left.database.flatMap { first in right.database.map { first + $0 } })
        }

        /// `serve 412 + work 0 + PostgreSQL 180 = 592 µs` (PostgreSQL left out when it runs elsewhere).
        var described: String {
            let figure = { (value: Double) in String(Int(value.rounded())) }
            return "serve \(figure(serve)) + work \(figure(work))" + (database.map { " + PostgreSQL \(figure($0))" } ?? "")
                + " = \(figure(total)) µs"
        }
    }
}
