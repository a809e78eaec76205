import ArgumentParser
import Foundation
import StorekeeperRuntime

/// `storekeeper-bench drill restore` (issue 56): a `pg_dump` taken while traffic flows, restored into a fresh cluster,
/// served by new processes and caught up to the live install.
struct RestoreDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Back up a live install with pg_dump, restore it elsewhere, catch it up.",
        discussion: """
            On a private cluster: migrates, loads --subscribers generated subscribers (stored as this release derives \
            them: `replay --all --write`), starts serve and work, sends \
            status reads, spends and new subscriptions at fixed rates, and --dump-after seconds in takes `pg_dump -Fc` \
            of the live database. The dump is restored with `pg_restore` into a fresh cluster, where new serve and work \
            processes start. Checks: `replay --all` on the restore finds no difference; what came after the dump's \
            start is caught up as it is in production — Apple redelivers its notifications (or `backfill` fetches them \
            from the Notification History) and clients retry their spends with the same idempotency keys — here by \
            sending again every spend and notification due from 2 s before the dump began; after that the restore \
            answers the status of 1,000 accounts (those spent from and those subscribed) as the live install does, and \
            every spend is recorded once. Prints the dump's size and the seconds the dump and the restore took.
            """)

    @OptionGroup var install: MixedTraffic.Options
    @Option(help: "Seconds of traffic.") var seconds = 20
    @Option(help: "Seconds into the traffic when pg_dump starts.") var dumpAfter = 5

    func validate() throws {
        guard seconds > 0, (0..<seconds).contains(dumpAfter) else { throw ValidationError("--seconds must be positive, --dump-after below it") }
        guard PrivateCluster.findBinDirectory() != nil else { throw ValidationError("pg_dump not found (install postgresql)") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.drill")
        var verdict = DrillVerdict("restore")
        let traffic = install.traffic(seconds: seconds)
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-drill-\(UUID().uuidString).dump")
        defer { try? FileManager.default.removeItem(at: dump) }
        try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-drill-live") { _, url in
            let live = try SystemUnderTest(databaseURL: url, clients: install.connections, environment: install.environment, logger: logger)
            try await live.stopping {
                let accounts = try await LoadedInstall.start(live, subscribers: install.subscribers, logger: logger)
                let requests = try traffic.requests(live, accounts: accounts, notificationsFrom: 0)
                let started = Date()
                let clock = ContinuousClock()
                let trafficStarted = clock.now
                async let measured = traffic.run(live, requests)
                try await Task.sleep(for: .seconds(dumpAfter + 1))
                let dumpStarted = clock.now
                _ = try BenchmarkDatabase.runTool("pg_dump", ["-Fc", "-f", dump.path], url: url)
                let dumpSeconds = (clock.now - dumpStarted).seconds
                let streams = try await measured
                let bytes = (try? FileManager.default.attributesOfItem(atPath: dump.path)[.size] as? Int) ?? 0
                verdict.check(
                    bytes > 0,
                    String(format: "pg_dump -Fc under traffic: %.1f s, %.1f MB", dumpSeconds, Double(bytes) / 1e6)
                        + streams.all.map {
                            String(format: "; %@ p99 %.1f ms, longest %.1f ms", $0.name, $0.phase.percentile(0.99), $0.phase.longest)
                        }
                        .joined())
                _ = try await live.waitUntilApplied(requests.notifications.count, receivedSince: started)
                try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-drill-restored") { _, restoredURL in
                    let restoreStarted = clock.now
                    try Self.restore(dump, into: restoredURL)
                    let restoreSeconds = (clock.now - restoreStarted).seconds
                    let restored = try SystemUnderTest(
                        databaseURL: restoredURL, clients: install.connections, environment: install.environment, chain: live.chain, logger: logger)
                    try await restored.stopping {
                        try restored.migrate()
                        try await restored.startServe()
                        try restored.startWorker()
                        verdict.check(true, String(format: "pg_restore into a fresh cluster: %.1f s; serve ready on the restore", restoreSeconds))
                        let difference = try LoadedInstall.replayDifference(restored)
                        verdict.check(difference == nil, "replay --all on the restore: " + (difference ?? "no difference"))
                        // The traffic's first second is its warm-up: request i was due i/rate seconds after it began.
                        let offset = (dumpStarted - trafficStarted).seconds - 2
                        let again = try await traffic.sendAgain(restored, requests, from: offset)
                        verdict.check(
                            again.failed == 0,
                            "caught up: \(again.sent) spends and notifications due from \(String(format: "%.1f", max(0, offset))) s sent again, \(again.failed) failed"
                        )
                        try await Self.waitUntilAllApplied(restored)
                        let spent = try await restored.count("SELECT count(*) FROM usage_requests WHERE idempotency_key LIKE 'drill-spend-%'")
                        let held = try await restored.count(
                            "SELECT count(*) FROM notifications WHERE received_at >= '\(LoadedInstall.timestamp(started))'")
                        verdict.check(
                            spent == requests.spends.count && held >= requests.notifications.count,
                            "every spend recorded once (\(spent) of \(requests.spends.count)), every notification held (\(held) of \(requests.notifications.count))"
                        )
                        let sample = Array(accounts.prefix(500)) + Array(requests.subscribed.prefix(500))
                        await LoadedInstall.checkSameStatuses(
                            sample, before: await LoadedInstall.statuses(of: sample, from: live), after: restored,
                            "the restore answers the status of \(sample.count) accounts as the live install does", into: &verdict)
                    }
                }
            }
        }
        try verdict.finish()
    }

    /// `pg_restore` of the custom-format `dump` into `url`'s (empty) database.
    static func restore(_ dump: URL, into url: DatabaseURL) throws {
        guard let bin = PrivateCluster.findBinDirectory() else { throw CommandFailure("pg_restore not found (install postgresql)") }
        let result = try ChildProcess.run(
            bin.appendingPathComponent("pg_restore").path,
            ["-h", url.host, "-p", String(url.port), "-U", url.username, "-d", url.database, "--no-owner", "--exit-on-error", dump.path])
        guard result.status == 0 else { throw CommandFailure("pg_restore failed: \(result.output.split(separator: "\n").last ?? "")") }
    }

    /// Waits until no notification is left to apply (the ones sent again are duplicates, answered without a new row).
    static func waitUntilAllApplied(_ system: SystemUnderTest) async throws {
        guard try await system.eventually(120, { try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0 }) else {
            throw CommandFailure("the restore did not apply every notification within 120 s")
        }
    }
}
