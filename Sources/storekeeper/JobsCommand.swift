import Application
import ArgumentParser
import Foundation
import Jobs
import Logging
import PostgresNIO
import StorekeeperRuntime

struct JobsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs", abstract: "Look at and act on the job queue (reads DATABASE_URL).",
        subcommands: [Stats.self, List.self, Show.self, Requeue.self, Cancel.self])

    /// Runs `body` with a queue on `DATABASE_URL`, bounded so an unreachable database fails with a message.
    static func withQueue<Result: Sendable>(_ body: @escaping @Sendable (PostgresJobQueue) async throws -> Result) async throws -> Result {
        try await withDatabase(label: "storekeeper.jobs") { client, logger in
            try await body(PostgresJobQueue(client: client, logger: logger))
        }
    }

    static func format(_ date: Date?) -> String { date?.formatted(.iso8601) ?? "-" }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Counts by kind and state; the oldest runnable job's age.")
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let statistics = try await JobsCommand.withQueue { try await $0.statistics() }
            if json { return try printJSON(statistics) }
            say("KIND                     STATE       COUNT")
            for count in statistics.counts {
                say(column(count.kind, 24) + " " + column(count.state.rawValue, 11) + " \(count.count)")
            }
            if statistics.counts.isEmpty { say("(no live jobs)") }
            say("oldest runnable job: " + (statistics.oldestRunnableAgeSeconds.map { String(format: "%.1f s", $0) } ?? "none waiting"))
            let finished = statistics.finishedLastHour.map { "\($0.kind) \($0.state) \($0.count)" }.joined(separator: ", ")
            say("finished in the last hour: " + (finished.isEmpty ? "none" : finished))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Jobs, newest first: id, kind, state, attempts, run_at, last error.")
        @Option(help: "available, running, failed, cancelled, completed or discarded.") var state: String?
        @Option(help: "Only this kind.") var kind: String?
        @Option(help: "At most this many.") var limit = 50
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if let state, JobState(rawValue: state) == nil { throw ValidationError("--state must be one of \(JobState.list())") }
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1...10000") }
        }

        func run() async throws {
            let (state, kind, limit) = (self.state.flatMap(JobState.init(rawValue:)), self.kind, self.limit)
            let records = try await JobsCommand.withQueue { try await $0.jobs(state: state, kind: kind, limit: limit) }
            if json { return try printJSON(records) }
            say("ID        KIND                 STATE       ATTEMPTS  RUN_AT                 LAST ERROR")
            for record in records {
                let attempts = "\(record.attempt)/\(record.maxAttempts.map(String.init) ?? "-")"
                say(
                    column(String(record.id), 9) + " "
                        + column(record.kind, 20) + " "
                        + column(record.state.rawValue, 11) + " "
                        + column(attempts, 9) + " "
                        + column(JobsCommand.format(record.runAt), 22) + " "
                        + (record.lastError.map { String($0.prefix(60)) } ?? ""))
            }
            if records.isEmpty { say("(none)") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Everything about one job, every attempt's error.")
        @Argument(help: "The job id.") var id: Int64

        func run() async throws {
            let id = self.id
            guard let record = try await JobsCommand.withQueue({ try await $0.job(id: id) }) else {
                throw CommandFailure("no job \(id)")
            }
            try printJSON(record)
        }
    }

    struct Requeue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make failed or cancelled jobs runnable again with a fresh attempt budget; prints how many.")
        @Argument(help: "Job ids (or use --state).") var ids: [Int64] = []
        @Option(help: "failed or cancelled: requeue every job in that state matching the filters.") var state: String?
        @Option(help: "Only this kind.") var kind: String?
        @Option(help: "Only jobs created at or after this RFC 3339 time.") var since: String?
        @Flag(help: "Only print what would be requeued.") var dryRun = false

        func validate() throws {
            guard ids.isEmpty != (state == nil) else { throw ValidationError("give job ids or --state, not both") }
            if let state, !JobState.requeueable.contains(where: { $0.rawValue == state }) {
                throw ValidationError("--state must be \(JobState.list(JobState.requeueable).replacingOccurrences(of: ", ", with: " or "))")
            }
            if let since, RFC3339.date(since) == nil { throw ValidationError("--since must be an RFC 3339 time") }
        }

        func run() async throws {
            let (ids, state, kind, dryRun) = (self.ids, self.state.flatMap(JobState.init(rawValue:)), self.kind, self.dryRun)
            let since = since.flatMap(RFC3339.date)
            let requeued = try await JobsCommand.withQueue { queue -> [Int64] in
                if let state { return try await queue.requeue(state: state, kind: kind, since: since, dryRun: dryRun) }
                return dryRun ? ids : try await queue.requeue(ids: ids)
            }
            // Ids of which some were not requeued end the command with 1 (below): the entry says so.
            let partly = !dryRun && state == nil && requeued.count < Set(ids).count
            if !dryRun, !requeued.isEmpty {
                let asked = Asked(ids: ids.isEmpty ? nil : ids, state: state?.rawValue, kind: kind, since: since)
                try await CommandAudit.record(
                    "jobs.requeue", command: "jobs requeue", status: partly ? 1 : 0, target: requeued.count == 1 ? String(requeued[0]) : nil,
                    before: asked, after: ["ids": requeued])
            }
            let list = requeued.prefix(20).map(String.init).joined(separator: ", ") + (requeued.count > 20 ? ", …" : "")
            // Ids of which none was requeued: the one line of the error says it all.
            if !requeued.isEmpty || dryRun || state != nil {
                say(
                    "\(dryRun ? "would requeue" : "requeued") \(requeued.count) job\(requeued.count == 1 ? "" : "s")\(requeued.isEmpty ? "" : ": \(list)")"
                )
            }
            if !dryRun, state == nil, requeued.count < Set(ids).count {
                let skipped = Set(ids).subtracting(requeued).sorted().map(String.init).joined(separator: ", ")
                throw CommandFailure("not requeued (not failed or cancelled, or unknown): \(skipped)")
            }
        }
    }

    /// What a requeue asked for, as the audit log keeps it.
    struct Asked: Encodable {
        var ids: [Int64]?
        var state: String?
        var kind: String?
        var since: Date?
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel jobs that have not started yet.")
        @Argument(help: "Job ids.") var ids: [Int64]

        func validate() throws { if ids.isEmpty { throw ValidationError("give at least one job id") } }

        func run() async throws {
            let ids = self.ids
            let cancelled = try await JobsCommand.withQueue { try await $0.cancel(ids: ids) }
            if !cancelled.isEmpty { say("cancelled \(cancelled.count) job\(cancelled.count == 1 ? "" : "s")") }
            // One entry a job, as the admin API's `job.cancel`, appended together; ids not cancelled end it with 1 (below).
            try await CommandAudit.record(
                "jobs cancel", status: cancelled.count < Set(ids).count ? 1 : 0,
                cancelled.map {
                    CommandAudit.Note(
                        action: "job.cancel", target: String($0), before: ["state": JobState.available.rawValue],
                        after: ["state": JobState.cancelled.rawValue])
                })
            if cancelled.count < Set(ids).count {
                let skipped = Set(ids).subtracting(cancelled).sorted().map(String.init).joined(separator: ", ")
                throw CommandFailure("not cancelled (running, finished or unknown): \(skipped)")
            }
        }
    }
}
