import ArgumentParser
import Foundation
import Persistence
import StorekeeperRuntime

/// `storekeeper-bench drill upgrade` (issue 56): a live install of the previous release, loaded, upgraded by this
/// release's `migrate` while its old processes serve traffic at fixed rates.
struct UpgradeDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade", abstract: "Upgrade a loaded database of the previous release while its processes serve.",
        discussion: """
            On a private cluster: migrates with the previous release (--previous-executable, --previous-sql: its \
            storekeeper and its sql/), loads --subscribers generated subscribers with a year of history (the scale \
            benchmark's loader), starts the previous release's serve and work, then sends status reads, spends and new \
            subscriptions at fixed rates, open loop, and --migrate-after seconds in runs this release's `migrate`. \
            Checks: the migration succeeds; no request fails or waits longer than --limit ms; every notification sent \
            is stored and applied and every spend recorded once; this release's serve and work then start on the \
            upgraded database, `replay --all` finds no difference, and the status of 1,000 accounts (those spent from \
            and those subscribed) reads the same as the previous release answered. scripts/drill-upgrade builds the \
            previous release.
            """)

    @Option(help: "The previous release's storekeeper executable.") var previousExecutable: String
    @Option(help: "The previous release's sql/ directory.") var previousSql: String
    @Option(help: "Generated subscribers loaded before the upgrade.") var subscribers = 100_000
    @Option(help: "Status reads a second.") var statusRate = 200
    @Option(help: "Spends a second.") var spendRate = 100
    @Option(help: "New subscriptions (Apple notifications) a second.") var notificationRate = 50
    @Option(help: "Seconds of measured traffic.") var seconds = 30
    @Option(help: "Seconds into the traffic when this release's migrate starts.") var migrateAfter = 5
    @Option(help: "Concurrent connections per stream (open loop uses twice as many).") var connections = 4
    @Option(help: "The longest any request may wait, in milliseconds.") var limit = 1_000
    @Option(help: "The tier catalogue the generated products come from.") var tiers = "config/tiers.yml"

    func validate() throws {
        guard FileManager.default.isExecutableFile(atPath: previousExecutable) else {
            throw ValidationError("--previous-executable \(previousExecutable): not an executable file")
        }
        guard FileManager.default.fileExists(atPath: previousSql) else { throw ValidationError("--previous-sql \(previousSql): no such directory") }
        guard FileManager.default.fileExists(atPath: tiers) else { throw ValidationError("--tiers \(tiers): no such file (run from the repository)") }
        guard (0...10_000_000).contains(subscribers), statusRate > 0, spendRate > 0, notificationRate > 0, seconds > 0, connections > 0,
            (0..<seconds).contains(migrateAfter), limit > 0
        else {
            throw ValidationError("rates, --seconds, --connections and --limit must be positive, --migrate-after below --seconds")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.drill")
        var verdict = DrillVerdict("upgrade")
        let traffic = MixedTraffic(
            statusRate: statusRate, spendRate: spendRate, notificationRate: notificationRate, seconds: seconds, connections: connections)
        let newSQL = SchemaMigrator.defaultDirectory().path
        try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-drill") { _, url in
            let tiers = URL(fileURLWithPath: self.tiers).standardizedFileURL.path
            let system = try SystemUnderTest(
                databaseURL: url, clients: connections, environment: ["STOREKEEPER_TIERS": tiers, "STOREKEEPER_SQL_DIR": previousSql],
                executable: previousExecutable, logger: logger)
            let newExecutable = SystemUnderTest.defaultExecutable
            do {
                let accounts = try await LoadedInstall.start(system, subscribers: subscribers, logger: logger)
                let before = try await system.count("SELECT max(version) FROM storekeeper_migrations")
                let requests = try traffic.requests(system, accounts: accounts, notificationsFrom: 0)
                let started = Date()
                say("  traffic: \(statusRate) status reads, \(spendRate) spends, \(notificationRate) notifications a second for \(seconds + 1) s …")
                async let measured = traffic.run(system, requests)
                try await Task.sleep(for: .seconds(migrateAfter + 1))
                var environment = system.environment
                environment["STOREKEEPER_SQL_DIR"] = newSQL
                let clock = ContinuousClock()
                let migrateStarted = clock.now
                let migration = try ChildProcess.run(newExecutable, ["migrate"], environment: environment)
                let migrateSeconds = (clock.now - migrateStarted).seconds
                let streams = try await measured
                let after = try await system.count("SELECT max(version) FROM storekeeper_migrations")
                verdict.check(
                    migration.status == 0,
                    String(format: "this release's migrate took %.2f s under traffic (migration %d → %d)", migrateSeconds, before, after)
                        + (migration.status == 0 ? "" : ": \(migration.output.split(separator: "\n").last ?? "")"))
                for (name, phase) in streams.all {
                    verdict.check(
                        phase.failed == 0 && phase.longest <= Double(limit),
                        String(
                            format: "%@: %d answered at %.0f/s, %d failed, p99 %.1f ms, longest %.1f ms (limit %d ms)", name, phase.answered,
                            phase.rate, phase.failed, phase.percentile(0.99), phase.longest, limit))
                }
                _ = try await system.waitUntilApplied(requests.notifications.count, receivedSince: started)
                let stored = try await system.count("SELECT count(*) FROM notifications WHERE received_at >= '\(LoadedInstall.timestamp(started))'")
                let spent = try await system.count("SELECT count(*) FROM usage_requests WHERE idempotency_key LIKE 'drill-spend-%'")
                verdict.check(
                    stored == requests.notifications.count && spent == requests.spends.count,
                    "nothing lost: \(stored) of \(requests.notifications.count) notifications stored and applied, \(spent) of \(requests.spends.count) spends recorded once"
                )
                let sample = Array(accounts.prefix(500)) + Array(requests.subscribed.prefix(500))
                let previousAnswers = await LoadedInstall.statuses(of: sample, from: system)
                system.stopProcesses()
                system.switchRelease(executable: newExecutable, sqlDirectory: newSQL)
                try await system.startServe()
                try system.startWorker()
                let replay = try ChildProcess.run(newExecutable, ["replay", "--all"], environment: system.environment)
                verdict.check(
                    replay.status == 0,
                    "this release's replay --all on the upgraded database: "
                        + (replay.status == 0 ? "no difference" : "status \(replay.status): \(replay.output.split(separator: "\n").last ?? "")"))
                let newAnswers = await LoadedInstall.statuses(of: sample, from: system)
                let differences = LoadedInstall.differences(sample, previousAnswers, newAnswers)
                verdict.check(
                    differences.isEmpty, "this release answers the status of \(sample.count) accounts as the previous one did" + differences)
                await system.stop()
            } catch {
                await system.stop()
                throw error
            }
        }
        try verdict.finish()
    }
}
