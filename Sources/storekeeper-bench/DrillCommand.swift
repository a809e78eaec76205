import ArgumentParser
import Foundation
import Logging
import NIOCore
import StorekeeperRuntime
import Synchronization

/// Reliability drills (SPEC §10) against `serve` + `work` processes on a private PostgreSQL cluster. Each prints what
/// it did, one `PASS`/`FAIL` line per check and a last line `drill <name>: PASS|FAIL`; it exits 1 on FAIL.
struct DrillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drill",
        abstract: "Reliability drills: PostgreSQL restart, worker kill -9, fuzzing, Apple's retries, hostile input, upgrade, restore.",
        subcommands: [
            PostgresRestartDrill.self, WorkerKillDrill.self, FuzzDrill.self, RetryDrill.self, HostileDrill.self, UpgradeDrill.self, RestoreDrill.self,
        ])
}

/// The checks of one drill.
struct DrillVerdict {
    let name: String
    private(set) var failed = false

    init(_ name: String) { self.name = name }

    mutating func check(_ condition: Bool, _ description: String) {
        say("  \(condition ? "PASS" : "FAIL")  \(description)")
        if !condition { failed = true }
    }

    func finish() throws {
        say("drill \(name): \(failed ? "FAIL" : "PASS")")
        if failed { throw ExitCode(1) }
    }
}

/// Runs `body` with serve (and `workers` workers) on a fresh private cluster, stopping everything afterwards.
func withDrillSystem(
    workers: Int, clients: Int, environment: [String: String] = [:], _ body: (SystemUnderTest, PrivateCluster, Int) async throws -> Void
) async throws {
    try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-drill") { cluster, url in
        let system = try SystemUnderTest(
            databaseURL: url, clients: clients, environment: environment, logger: commandLogger("storekeeper.drill"))
        try await system.stopping {
            try system.migrate()
            try await system.startServe()
            for _ in 0..<workers { try system.startWorker() }
            try await body(system, cluster, url.port)
        }
    }
}

/// Sends `bodies` from `clients` concurrent clients, optionally paced at `rate`/s; returns each one's answer.
func sendAll(_ bodies: [ByteBuffer], system: SystemUnderTest, clients: Int, rate: Int? = nil) async -> [(status: UInt?, answer: String?)] {
    final class Cursor: Sendable { let next = Atomic<Int>(0) }
    let cursor = Cursor()
    let clock = ContinuousClock()
    let began = clock.now
    return await withTaskGroup(of: [(Int, UInt?, String?)].self) { group in
        for _ in 0..<clients {
            group.addTask {
                var answers: [(Int, UInt?, String?)] = []
                while true {
                    let index = cursor.next.add(1, ordering: .relaxed).oldValue
                    guard index < bodies.count else { return answers }
                    if let rate { try? await Task.sleep(until: began + .microseconds(Int64(index) * 1_000_000 / Int64(rate)), clock: clock) }
                    let (status, answer) = await system.post(bodies[index], timeout: 15)
                    answers.append((index, status, answer))
                }
            }
        }
        var results = [(status: UInt?, answer: String?)](repeating: (nil, nil), count: bodies.count)
        for await part in group { for (index, status, answer) in part { results[index] = (status, answer) } }
        return results
    }
}

struct PostgresRestartDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres-restart",
        abstract: "Stream notifications, stop PostgreSQL for a few seconds, start it again; every 200 must be applied exactly once.")

    @Option(help: "Notifications streamed.") var notifications = 3_000
    @Option(help: "Streaming rate per second.") var rate = 200

    func run() async throws {
        var verdict = DrillVerdict("postgres-restart")
        try await withDrillSystem(workers: 1, clients: 16) { system, cluster, port in
            let start = Date()
            let signed = try (0..<notifications).map { try system.subscribe($0, at: start.addingTimeInterval(Double($0) / 1000)) }
            let streamSeconds = Double(notifications) / Double(rate)
            let outage = Task {
                try await Task.sleep(for: .milliseconds(Int64(streamSeconds * 250)))
                say("  stopping PostgreSQL …")
                cluster.stop()
                try await Task.sleep(for: .seconds(5))
                say("  starting PostgreSQL again")
                _ = try cluster.start(port: port)
            }
            var answers = await sendAll(signed.map(\.body), system: system, clients: 16, rate: rate)
            try await outage.value
            let statuses = Dictionary(grouping: answers.map { $0.status.map(String.init) ?? "no answer" }, by: { $0 }).mapValues(\.count)
            say("  first delivery: \(statuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))")
            verdict.check(answers.contains { $0.status == 503 }, "the intake answered 503 while PostgreSQL was down")
            verdict.check(answers.allSatisfy { $0.status == 200 || $0.status == 503 }, "every answer was 200 or 503 (never 500, never silence)")
            let acceptedFirst = Set(answers.indices.filter { answers[$0].status == 200 }.map { signed[$0].uuid })
            let stored = try await system.count("SELECT count(*) FROM notifications")
            verdict.check(
                stored >= acceptedFirst.count, "every notification answered 200 is stored (\(acceptedFirst.count) answered, \(stored) stored)")

            // Apple retries what was not answered 200.
            var retries = 0
            for round in 0..<20 where answers.contains(where: { $0.status != 200 }) {
                let pending = answers.indices.filter { answers[$0].status != 200 }
                retries += pending.count
                let again = await sendAll(pending.map { signed[$0].body }, system: system, clients: 16)
                for (offset, index) in pending.enumerated() { answers[index] = again[offset] }
                if answers.contains(where: { $0.status != 200 }) { try await Task.sleep(for: .seconds(Double(round + 1))) }
            }
            verdict.check(
                answers.allSatisfy { $0.status == 200 }, "after Apple-style retries (\(retries) re-sent) every notification was answered 200")
            let applied = try await system.eventually(120) {
                try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == notifications
            }
            verdict.check(applied, "all \(notifications) notifications applied")
            if !applied {
                say(
                    "  not applied: "
                        + (try await system.text(
                            "SELECT string_agg(id || ' ' || state || ' attempt ' || attempt || ' ' || errors::text, '; ') FROM jobs WHERE kind = 'apply-notification'"
                        )))
            }
            let completed = try await system.count("SELECT count(*) FROM job_history WHERE kind = 'apply-notification' AND state = 'completed'")
            verdict.check(completed == notifications, "each notification's apply job completed exactly once (\(completed))")
            let grants = try await system.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'grant:%'")
            verdict.check(grants == notifications, "one cycle grant per subscription, none twice (\(grants))")
        }
        try verdict.finish()
    }
}

struct WorkerKillDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker-kill", abstract: "kill -9 workers while they apply a backlog; every job completes once, no grant twice.")

    @Option(help: "Notifications in the backlog.") var notifications = 6_000
    @Option(help: "Workers killed (one at a time, a fresh one started each time).") var kills = 4

    func run() async throws {
        var verdict = DrillVerdict("worker-kill")
        try await withDrillSystem(workers: 0, clients: 16) { system, _, _ in
            let start = Date()
            let signed = try (0..<notifications).map { try system.subscribe($0, at: start.addingTimeInterval(Double($0) / 1000)) }
            let answers = await sendAll(signed.map(\.body), system: system, clients: 16)
            verdict.check(answers.allSatisfy { $0.status == 200 }, "all \(notifications) notifications accepted")
            // Workers start on the backlog and are killed while they apply it.
            try system.startWorker()
            try system.startWorker()
            for kill in 1...max(kills, 1) {
                try await Task.sleep(for: .milliseconds(900))
                guard let victim = system.workers.randomElement() else { break }
                let applied = try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL")
                let running = try await system.count("SELECT count(*) FROM jobs WHERE state = 'running'")
                say("  kill -9 worker \(victim.pid) (\(kill)/\(kills)) with \(applied) applied, \(running) jobs running; starting a fresh one")
                system.kill(victim, signal: SIGKILL)
                try system.startWorker()
            }
            let applied = try await system.eventually(240) {
                try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == notifications
            }
            verdict.check(applied, "every notification applied (jobs of killed workers rescued)")
            let completed = try await system.count("SELECT count(*) FROM job_history WHERE kind = 'apply-notification' AND state = 'completed'")
            verdict.check(completed == notifications, "each apply job completed exactly once (\(completed) of \(notifications))")
            let rescued = try await system.count("SELECT count(*) FROM job_history WHERE kind = 'apply-notification' AND attempt > 1")
            say("  jobs that needed more than one attempt: \(rescued)")
            let doubled = try await system.count(
                "SELECT count(*) FROM (SELECT b.billing_period FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket WHERE l.operation_key LIKE 'grant:%' GROUP BY b.billing_period, b.meter HAVING count(*) > 1) twice"
            )
            let grants = try await system.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'grant:%'")
            verdict.check(doubled == 0 && grants == notifications, "one grant per subscription, no duplicate (\(grants) grants)")
        }
        try verdict.finish()
    }
}
