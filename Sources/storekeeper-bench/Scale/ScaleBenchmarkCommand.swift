import ArgumentParser
import Foundation
import Logging
import NIOCore
import PostgresNIO
import StorekeeperRuntime

/// `storekeeper-bench scale`: the growth curve — the same measurements on an empty database and on ones holding N
/// generated subscribers with a year of history each.
struct ScaleBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "The growth curve: hot path, applying, storage, migrate and replay at N generated subscribers.",
        discussion: """
            For each N of --subscribers, on a private PostgreSQL cluster of its own: migrates, loads N subscribers with a \
            year of history each (Scale/load.sql, server-side bulk inserts: renewals, upgrades, downgrades, refunds, \
            trials, billing retry, top-ups, spends, events within retention; see docs/capacity.md), times the load, VACUUM \
            ANALYZE and a CHECKPOINT, and `migrate` on the populated database, measures storage per subscriber-year, times \
            `replay --all` (unless --skip-replay), then starts `serve` + `work`, waits until `work`'s start-up jobs are \
            done (at most --settle-seconds; the load leaves the analytics rollup's position past its ledger, as a \
            caught-up server has it) and measures at fixed rates, open loop: status of accounts never read (cache cold) \
            and of 1,000 accounts read before (warm), each with /healthz sent beside it on every eighth connection as its \
            same-moment reference and the share of reads served from the cache; spends from accounts spending once each \
            (cold: at a million, untouched since the load) and from 1,000 spending again and again (warm: of the top tier \
            at a million), each followed by pgbench TPC-B at the same rate as its reference (once the phase's I/O readings \
            settle; on tables made and flushed before the phases, read into the page cache before each run); /healthz \
            alone; then applied/s of --notifications new subscriptions. At N = 0 the reads and spends are of accounts \
            subscribed first through the intake (never-seen accounts would be cheaper), each phase its own. Uses \
            config/tiers.yml (the catalogue the generator sells from; --tiers). After the cold status reads and each spend \
            phase it prints what PostgreSQL did over the phase per request sent: blocks read into its buffers, by table \
            and index (pg_statio, each reading taken once every backend has reported, 11 s after the phase before it and \
            after this one, so the counts include those seconds), KiB the machine read from the disk (pgpgin), and WAL \
            written with its full-page images (pg_stat_wal). They count the whole database and machine, `work`'s jobs and \
            autovacuum too.
            """)

    @Option(help: "Subscriber counts, comma-separated, each on a fresh database.") var subscribers = "0,100000,1000000"
    @Option(help: "Status requests a second, open loop.") var statusRate = 5_000
    @Option(help: "Spends a second, open loop.") var spendRate = 1_000
    @Option(help: "Seconds per measured phase.") var seconds = 5
    @Option(help: "Concurrent connections (open loop uses twice as many).") var connections = 32
    @Option(help: "New subscriptions sent to measure applied/s.") var notifications = 5_000
    @Option(help: "The tier catalogue the generated products come from.") var tiers = "config/tiers.yml"
    @Option(help: "Seconds to wait at most, after `work` starts, for its start-up jobs to finish before measuring (0: do not wait).")
    var settleSeconds = 1_800
    @Option(
        name: .customLong("postgres-setting"),
        help: ArgumentHelp(
            "A server setting of each private cluster beside PostgreSQL's defaults; repeat it. Letters, digits and _ . in the name, those and - , + in the value; the cluster's own port, socket and files are refused. PostgreSQL checks the rest as each cluster starts. Printed, and kept in --json.",
            valueName: "name=value"))
    var postgresSettings: [String] = []
    @Flag(help: "Skip `replay --all` (at a million it takes about 18 minutes of the run).") var skipReplay = false
    @Flag(help: "Print one JSON object per N on the last lines.") var json = false

    /// The counts, strictly: digits between commas (`1,,2` and ` 5` are refused, not read as something else).
    var counts: [Int] { subscribers.split(separator: ",", omittingEmptySubsequences: false).compactMap { Int($0) } }

    func validate() throws {
        let counts = self.counts
        guard !counts.isEmpty, counts.count == subscribers.split(separator: ",", omittingEmptySubsequences: false).count,
            counts.allSatisfy({ (0...10_000_000).contains($0) })
        else {
            throw ValidationError("--subscribers takes counts from 0 to 10,000,000, comma-separated")
        }
        guard statusRate > 0, spendRate > 0, seconds > 0, connections > 0, (1...1_000_000).contains(notifications),
            (0...86_400).contains(settleSeconds)
        else {
            throw ValidationError(
                "--status-rate, --spend-rate, --seconds and --connections must be positive, --notifications 1 to 1,000,000, --settle-seconds 0 to 86,400"
            )
        }
        for setting in postgresSettings {
            do { try PrivateCluster.checkSetting(setting) } catch { throw ValidationError("--postgres-setting \(error.description)") }
        }
        guard FileManager.default.fileExists(atPath: tiers) else { throw ValidationError("--tiers \(tiers): no such file (run from the repository)") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let loader = try ScaleLoader.fromBundle()
        // A VM's proactive reclaim pages out what was not read for a minute: "cold" then means disk for every probe.
        let damon = (try? String(contentsOfFile: "/sys/kernel/mm/damon/admin/kdamonds/0/state", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        say("scale: DAMON proactive reclaim on this machine: \(damon ?? "not configured")")
        say("scale: PostgreSQL settings beside the defaults: \(postgresSettings.isEmpty ? "none" : postgresSettings.joined(separator: " "))")
        var points: [ScalePoint] = []
        for count in counts {
            say("scale: \(count) subscribers …")
            let point = try await BenchmarkDatabase.with(url: nil, settings: postgresSettings, logger: logger) { url in
                try await ScaleRun(options: self, subscribers: count, databaseURL: url, loader: loader, logger: logger).run()
            }
            say(point.line)
            points.append(point)
        }
        // The report's lines carry one JSON object per N when asked: no single object to add.
        ScalePoint.report(points, settings: postgresSettings, json: json).print(json: false)
    }
}
