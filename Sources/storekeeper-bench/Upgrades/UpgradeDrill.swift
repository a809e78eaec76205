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
            benchmark's loader) and stores the previous release's derivation of them (its `replay --all --write`), \
            starts the previous release's serve and work, then sends status reads, spends and new subscriptions at \
            fixed rates, open loop, and --migrate-after seconds in runs this release's `migrate`. Checks: the \
            migration succeeds; no request fails or waits longer than --limit ms; every notification sent is stored \
            and applied and every spend recorded once; this release's serve and work then start on the upgraded \
            database, `replay --all` finds no difference, and the status of 1,000 accounts (those spent from and those \
            subscribed) reads the same as the previous release answered. scripts/drill-upgrade builds the previous \
            release.
            """)

    @Option(help: "The previous release's storekeeper executable.") var previousExecutable: String
    @Option(help: "The previous release's sql/ directory.") var previousSql: String
    @OptionGroup var install: MixedTraffic.Options
    @Option(help: "Seconds of measured traffic.") var seconds = 30
    @Option(help: "Seconds into the traffic when this release's migrate starts.") var migrateAfter = 5
    @Option(help: "The longest any request may wait, in milliseconds.") var limit = 1_000

    func validate() throws {
        guard FileManager.default.isExecutableFile(atPath: previousExecutable) else {
            throw ValidationError("--previous-executable \(previousExecutable): not an executable file")
        }
        guard FileManager.default.fileExists(atPath: previousSql) else { throw ValidationError("--previous-sql \(previousSql): no such directory") }
        guard seconds > 0, (0..<seconds).contains(migrateAfter), limit > 0 else {
            throw ValidationError("--seconds and --limit must be positive, --migrate-after below --seconds")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.drill")
        var verdict = DrillVerdict("upgrade")
        let traffic = install.traffic(seconds: seconds)
        let newSQL = SchemaMigrator.defaultDirectory().path
        let newExecutable = SystemUnderTest.defaultExecutable
        try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-drill") { _, url in
            let system = try SystemUnderTest(
                databaseURL: url, clients: install.connections, environment: install.environment.merging(["STOREKEEPER_SQL_DIR": previousSql]) { $1 },
                executable: previousExecutable, logger: logger)
            try await system.stopping {
                let accounts = try await LoadedInstall.start(system, subscribers: install.subscribers, logger: logger)
                let before = try await system.count("SELECT max(version) FROM storekeeper_migrations")
                let requests = try traffic.requests(system, accounts: accounts, notificationsFrom: 0)
                let started = Date()
                say(
                    "  traffic: \(traffic.statusRate) status reads, \(traffic.spendRate) spends, \(traffic.notificationRate) notifications a second for \(seconds + 1) s …"
                )
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
                let retried = migration.output.split(separator: "\n").filter { $0.contains("trying again") }
                let retries = retried.count
                if let first = retried.first { say("  migrate said: \(first.prefix(400))") }
                verdict.check(
                    migration.status == 0,
                    String(
                        format: "this release's migrate took %.2f s under traffic (migration %d → %d, %d files tried again)", migrateSeconds, before,
                        after, retries)
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
                let difference = try LoadedInstall.replayDifference(system)
                verdict.check(difference == nil, "this release's replay --all on the upgraded database: " + (difference ?? "no difference"))
                await LoadedInstall.checkSameStatuses(
                    sample, before: previousAnswers, after: system,
                    "this release answers the status of \(sample.count) accounts as the previous one did",
                    into: &verdict)
                // The backfill sql/0048 enqueued, walked by this release's worker while it serves.
                let walked = try await system.eventually(600) {
                    try await system.count("SELECT count(*) FROM jobs WHERE kind = 'file-transactions'") == 0
                }
                let subscriptions = try await system.count("SELECT count(*) FROM subscriptions WHERE store = 'app_store'")
                let batches = try await system.count("SELECT count(*) FROM job_history WHERE kind = 'file-transactions' AND state = 'completed'")
                let span = try await system.text(
                    "SELECT round(extract(epoch FROM max(finished_at) - min(finished_at)))::text FROM job_history WHERE kind = 'file-transactions'")
                verdict.check(
                    walked,
                    "the file-transactions walk (sql/0048) went through \(subscriptions) App Store subscriptions in \(batches) batches, "
                        + "\(span) s from the first batch to the last, beside this release's replay --all")
            }
        }
        try verdict.finish()
    }
}
