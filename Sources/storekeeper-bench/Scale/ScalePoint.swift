import Foundation

/// What one N of the growth curve measured.
struct ScalePoint {
    var subscribers: Int
    var loadSeconds = 0.0
    var vacuumSeconds = 0.0
    var checkpointSeconds = 0.0
    var databaseBytes = 0
    var bytesPerSubscriberYear = 0.0
    var keptBytesPerSubscriberYear = 0.0
    var migrateSeconds = 0.0
    var replaySeconds = 0.0
    var replayStatus: Int32 = 0
    var replayDifferences = false
    /// Whether `replay --all` ran (`--skip-replay`).
    var replayed = false
    var health = LoadPhase()
    var statusCold = LoadPhase()
    var statusWarm = LoadPhase()
    /// The share of each status phase's reads `serve` answered from its cache.
    var coldFromCache = 0.0
    var warmFromCache = 0.0
    /// Spends from accounts not touched since the load (`spendP99` in the JSON).
    var spend = LoadPhase()
    /// What PostgreSQL read and wrote over the cold status reads, per request (``PhaseIO``).
    var statusColdIO = PhaseIO.PerRequest()
    /// The same over the cold spends, and over the warm ones.
    var spendColdIO = PhaseIO.PerRequest()
    var spendWarmIO = PhaseIO.PerRequest()
    /// Spends from 1,000 accounts that spent before.
    var spendWarm = LoadPhase()
    /// pgbench TPC-B at the spends' rate, open loop, after the cold spends: their reference.
    var tpcb = LoadPhase()
    /// The same right after the warm spends.
    var tpcbWarm = LoadPhase()
    var intake = 0.0
    var appliedPerSecond = 0.0
    /// Seconds `work`'s start-up jobs took before the phases; `nil`: still running at `--settle-seconds`.
    var startUpJobsSeconds: Double? = 0

    private func ratio(_ phase: LoadPhase, _ reference: LoadPhase) -> String {
        String(format: "%.2f×", phase.percentile(0.99) / max(reference.percentile(0.99), 0.001))
    }

    private static func milliseconds(_ phase: LoadPhase) -> String {
        String(format: "p50 %.2f p99 %.2f p99.9 %.2f ms", phase.percentile(0.5), phase.percentile(0.99), phase.percentile(0.999))
    }

    var line: String {
        [
            "  N = \(subscribers): load \(String(format: "%.1f", loadSeconds)) s + VACUUM ANALYZE \(String(format: "%.1f", vacuumSeconds)) s + CHECKPOINT \(String(format: "%.1f", checkpointSeconds)) s, "
                + "database \(databaseBytes / 1_048_576) MiB, \(Int(bytesPerSubscriberYear)) B per subscriber-year (\(Int(keptBytesPerSubscriberYear)) B kept for good)",
            "    migrate (populated) \(String(format: "%.2f", migrateSeconds)) s; "
                + (replayed
                    ? "replay --all \(String(format: "%.1f", replaySeconds)) s"
                        + (replayDifferences ? " (found differences: exit 3)" : " (no differences)") : "replay skipped"),
            "    start-up jobs: "
                + (startUpJobsSeconds.map { String(format: "done %.0f s after `work` started, before the phases", $0) }
                    ?? "still running at --settle-seconds: they overlap the phases"),
            "    /healthz         \(Self.milliseconds(health)), \(health.failed) failed",
            "    status, cold (¼ rate) \(Self.milliseconds(statusCold)), \(statusCold.failed) failed (p99 \(String(format: "%.2f", statusCold.percentile(0.99) / max(statusCold.referencePercentile(0.99), 0.001)))× /healthz beside it, whose p99 was \(String(format: "%.2f", statusCold.referencePercentile(0.99))) ms; \(String(format: "%.1f", coldFromCache * 100)) % from the cache)",
            "      PostgreSQL over the phase: \(statusColdIO.line)",
            "    status, warm     \(Self.milliseconds(statusWarm)), \(statusWarm.failed) failed (p99 \(String(format: "%.2f", statusWarm.percentile(0.99) / max(statusWarm.referencePercentile(0.99), 0.001)))× /healthz beside it, whose p99 was \(String(format: "%.2f", statusWarm.referencePercentile(0.99))) ms; \(String(format: "%.1f", warmFromCache * 100)) % from the cache)",
            "    spends, cold     \(Self.milliseconds(spend)), \(spend.failed) failed",
            "      PostgreSQL over the phase: \(spendColdIO.line)",
            "    spends, warm     \(Self.milliseconds(spendWarm)), \(spendWarm.failed) failed",
            "      PostgreSQL over the phase: \(spendWarmIO.line)",
            "    TPC-B, same rate, after the cold spends \(Self.milliseconds(tpcb)); after the warm \(Self.milliseconds(tpcbWarm))",
            "    spends p99 ÷ TPC-B p99 after them: cold \(ratio(spend, tpcb)), warm \(ratio(spendWarm, tpcbWarm))",
            "    intake \(Int(intake))/s, applied \(Int(appliedPerSecond))/s",
        ].joined(separator: "\n")
    }

    /// The curve, each N against the first (the empty database when it is first).
    /// The report; `settings` are the private clusters' server settings beside PostgreSQL's defaults, which the JSON
    /// records (checked `name=value` strings: nothing in them needs escaping).
    static func report(_ points: [ScalePoint], settings: [String] = [], json: Bool) -> BenchmarkReport {
        var report = BenchmarkReport()
        guard let base = points.first else { return report }
        if points.count > 1 {
            report.lines.append(
                "scale: against N = \(base.subscribers) (status and spends at fixed rates, open loop; applied/s of new subscriptions)")
        }
        for point in points.dropFirst() {
            let ratio = { (value: Double, reference: Double) in String(format: "%.2f×", value / max(reference, 0.001)) }
            report.lines.append(
                "  N = \(point.subscribers): status p99 cold \(ratio(point.statusCold.percentile(0.99), base.statusCold.percentile(0.99))), "
                    + "warm \(ratio(point.statusWarm.percentile(0.99), base.statusWarm.percentile(0.99))), "
                    + "spends p99 cold \(ratio(point.spend.percentile(0.99), base.spend.percentile(0.99))), "
                    + "warm \(ratio(point.spendWarm.percentile(0.99), base.spendWarm.percentile(0.99))), "
                    + "applied/s \(ratio(point.appliedPerSecond, base.appliedPerSecond))")
        }
        if json {
            for point in points {
                report.lines.append(
                    "{\"benchmark\":\"scale\",\"subscribers\":\(point.subscribers),\"loadSeconds\":\(String(format: "%.1f", point.loadSeconds)),"
                        + "\"vacuumSeconds\":\(String(format: "%.1f", point.vacuumSeconds)),\"checkpointSeconds\":\(String(format: "%.1f", point.checkpointSeconds)),"
                        + "\"bytesPerSubscriberYear\":\(Int(point.bytesPerSubscriberYear)),\"statusColdP99\":\(String(format: "%.3f", point.statusCold.percentile(0.99))),"
                        + "\"statusWarmP99\":\(String(format: "%.3f", point.statusWarm.percentile(0.99))),\"statusWarmHealthzBesideP99\":\(String(format: "%.3f", point.statusWarm.referencePercentile(0.99))),"
                        + "\"statusColdHealthzBesideP99\":\(String(format: "%.3f", point.statusCold.referencePercentile(0.99))),\"spendP99\":\(String(format: "%.3f", point.spend.percentile(0.99))),"
                        + "\"spendWarmP99\":\(String(format: "%.3f", point.spendWarm.percentile(0.99))),"
                        + "\"tpcbP99\":\(String(format: "%.3f", point.tpcb.percentile(0.99))),\"tpcbWarmP99\":\(String(format: "%.3f", point.tpcbWarm.percentile(0.99))),\"healthzP99\":\(String(format: "%.3f", point.health.percentile(0.99))),"
                        + "\"statusColdBlocksRead\":\(String(format: "%.2f", point.statusColdIO.total)),"
                        + "\"statusColdDiskKiB\":\(point.statusColdIO.diskKiB.map { String(format: "%.1f", $0) } ?? "null"),"
                        + "\"spendBlocksRead\":\(String(format: "%.2f", point.spendColdIO.total)),"
                        + "\"spendDiskKiB\":\(point.spendColdIO.diskKiB.map { String(format: "%.1f", $0) } ?? "null"),"
                        + "\"spendWALKiB\":\(String(format: "%.1f", point.spendColdIO.walKiB)),"
                        + "\"spendFullPageImages\":\(String(format: "%.2f", point.spendColdIO.fullPageImages)),"
                        + "\"spendWarmBlocksRead\":\(String(format: "%.2f", point.spendWarmIO.total)),"
                        + "\"spendWarmDiskKiB\":\(point.spendWarmIO.diskKiB.map { String(format: "%.1f", $0) } ?? "null"),"
                        + "\"appliedPerSecond\":\(Int(point.appliedPerSecond)),\"replaySeconds\":\(String(format: "%.1f", point.replaySeconds)),"
                        + "\"postgresSettings\":[\(settings.map { "\"\($0)\"" }.joined(separator: ","))]}")
            }
        }
        return report
    }
}
