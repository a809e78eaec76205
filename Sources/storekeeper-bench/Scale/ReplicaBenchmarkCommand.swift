import ArgumentParser
import Foundation
import Logging
import NIOCore
import PostgresNIO
import StorekeeperRuntime

/// `storekeeper-bench replica`: status reads that miss the cache, served from a streaming replica on the same
/// machine, against the same reads served from the primary, with the replica's replay lag sampled throughout.
struct ReplicaBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "Status reads from a streaming replica (STOREKEEPER_REPLICA_URL), with its replay lag, against reads from the primary.",
        discussion: """
            On a private PostgreSQL cluster: migrates, loads --subscribers generated subscribers (Scale/load.sql, as \
            `scale` does), makes a hot standby of it on the same machine (pg_basebackup -R, streaming) and starts two \
            `serve` processes: one with STOREKEEPER_REPLICA_URL set to the standby, one without. Then, for each of \
            --rounds, after the standby has caught up and one round of warm-up (printed, not counted), once on each \
            (the replica's first in odd rounds, the primary's in even ones): status reads of accounts never read (every one a \
            miss of the cache), open loop at --status-rate, with /healthz beside them on every eighth connection as the \
            same-moment reference, while spends flow at --spend-rate through the other `serve` so that the primary \
            writes WAL for the standby to replay. Prints each phase's latencies, the share of reads the replica \
            answered, and the replay lag sampled every 100 ms from pg_stat_replication (bytes behind the primary's \
            WAL, and replay_lag), the CPU each PostgreSQL server spent in the phase (the load a replica takes off the \
            primary), and the ratio of the two sides' p99s per round.
            """)

    @Option(help: "Generated subscribers loaded first.") var subscribers = 100_000
    @Option(help: "Status reads a second, open loop, of accounts never read.") var statusRate = 1_250
    @Option(help: "Spends a second beside them (the writes the standby replays).") var spendRate = 500
    @Option(help: "Seconds per measured phase.") var seconds = 5
    @Option(help: "Rounds of one replica phase and one primary phase.") var rounds = 2
    @Option(help: "Concurrent connections (open loop uses twice as many).") var connections = 32
    @Option(help: "The tier catalogue the generated products come from.") var tiers = "config/tiers.yml"

    func validate() throws {
        guard (1_000...10_000_000).contains(subscribers) else { throw ValidationError("--subscribers takes 1,000 to 10,000,000") }
        guard statusRate > 0, spendRate > 0, seconds > 0, connections > 0, (1...20).contains(rounds) else {
            throw ValidationError("--status-rate, --spend-rate, --seconds and --connections must be positive, --rounds 1 to 20")
        }
        guard FileManager.default.fileExists(atPath: tiers) else { throw ValidationError("--tiers \(tiers): no such file (run from the repository)") }
    }

    /// The reads of one phase, each of an account no phase read before (more than the phase sends).
    var accountsPerPhase: Int { statusRate * 2 * (seconds + 1) }
    /// A replica phase and a primary phase a round, and a round of warm-up first.
    var phases: Int { (rounds + 1) * 2 }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let loader = try ScaleLoader.fromBundle()
        let tiers = URL(fileURLWithPath: self.tiers).standardizedFileURL.path
        guard subscribers >= accountsPerPhase * phases else {
            throw ValidationError(
                "--subscribers \(subscribers) is too few: every read is of an account never read, \(accountsPerPhase * phases) in all")
        }
        let report = try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-bench-replica") { cluster, url in
            try await BenchmarkDatabase.warmWAL(url: url, logger: logger)
            let direct = try SystemUnderTest(databaseURL: url, clients: connections, environment: ["STOREKEEPER_TIERS": tiers], logger: logger)
            try direct.migrate()
            say("replica: loading \(subscribers) subscribers …")
            _ = try await loader.load(subscribers: subscribers, now: Date(), url: url, logger: logger)
            say("replica: making the standby (pg_basebackup -R) …")
            let standby = try PrivateCluster(directory: cluster.directory.appendingPathComponent("standby"))
            let interrupted = Interruption.register { standby.stop(immediately: true) }
            defer {
                Interruption.done(interrupted)
                standby.stop(immediately: true)
            }
            var standbyURL = try standby.startStandby(of: url)
            standbyURL.database = url.database
            let viaReplica = try SystemUnderTest(
                databaseURL: url, clients: connections, environment: ["STOREKEEPER_TIERS": tiers, "STOREKEEPER_REPLICA_URL": standbyURL.urlString],
                logger: logger)
            return try await direct.stopping {
                try await viaReplica.stopping {
                    try await measure(
                        direct: direct, viaReplica: viaReplica, url: url, servers: (cluster.postmasterProcess, standby.postmasterProcess),
                        logger: logger)
                }
            }
        }
        for line in report { print(line) }
    }

    private func measure(
        direct: SystemUnderTest, viaReplica: SystemUnderTest, url: DatabaseURL, servers: (primary: Int32?, standby: Int32?), logger: Logger
    ) async throws -> [String] {
        func cpu() -> (primary: Double, standby: Double) {
            (
                servers.primary.map { ProcessCPU.seconds(ofProcessAndChildren: $0) } ?? 0,
                servers.standby.map { ProcessCPU.seconds(ofProcessAndChildren: $0) } ?? 0
            )
        }
        try await direct.startServe()
        try await viaReplica.startServe()
        let everyone = try await ScaleLoader.accounts(
            states: ["active", "grace_period", "billing_retry", "expired", "refunded", "revoked"], count: accountsPerPhase * phases, url: url,
            logger: logger)
        let active = try await ScaleLoader.accounts(states: ["active"], count: 20_000, url: url, logger: logger)
        guard everyone.count >= accountsPerPhase * phases, !active.isEmpty else { throw CommandFailure("too few generated accounts to read") }
        let load = HotPathLoad(connections: connections, seconds: seconds)
        let key = [("Authorization", "Bearer bench")]
        let healthz = LoadRequest(path: "/healthz", method: .GET)
        var lines = [
            "replica: \(subscribers) subscribers; status reads of accounts never read at \(statusRate)/s and spends at \(spendRate)/s, open loop, "
                + "\(seconds) s a phase; a hot standby on the same machine"
        ]
        // From a standby that has replayed what the load and the start-up wrote; the warm-up round then gives both
        // sides' buffers and plans the steady state (the primary's were warm from the load, the standby's empty).
        try await ReplicaLagSampler(url: url, logger: logger).waitUntilCaughtUp()
        var ratios: [String] = []
        var phase = 0
        for round in 0...rounds {
            var p99s: [String: Double] = [:]
            let sides = [("replica", viaReplica), ("primary", direct)]
            for (side, system) in round % 2 == 0 && round > 0 ? sides.reversed() : sides {
                let accounts = Array(everyone[(phase * accountsPerPhase)..<((phase + 1) * accountsPerPhase)])
                phase += 1
                let spender = system === viaReplica ? direct : viaReplica
                let before = await system.statusReads()
                let cpuBefore = cpu()
                let sampler = ReplicaLagSampler(url: url, logger: logger)
                let sampling = Task { try await sampler.sample() }
                async let spends = load.pace(spender, rate: spendRate) { index in
                    let body = ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(UUID())"}"#)
                    return LoadRequest(
                        path: "/v1/accounts/\(active[index % active.count])/usage", method: .POST,
                        headers: key + [("Content-Type", "application/json")], body: body)
                }
                let reads = try await load.pace(system, rate: statusRate, reference: healthz) { index in
                    LoadRequest(path: "/v1/accounts/\(accounts[index % accounts.count])/status", method: .GET, headers: key)
                }
                let spent = try await spends
                sampling.cancel()
                let lag = try await sampling.value
                let cpuAfter = cpu()
                let after = await system.statusReads()
                p99s[side] = reads.percentile(0.99)
                lines.append(
                    "  \(round == 0 ? "warm-up" : "round \(round)"), from the \(side): status p50 \(Self.ms(reads.percentile(0.5))) p99 \(Self.ms(reads.percentile(0.99))) ms, "
                        + "\(reads.failed) failed, /healthz beside p99 \(Self.ms(reads.referencePercentile(0.99))) ms; "
                        + "\(String(format: "%.1f", after.replicaShare(since: before) * 100)) % answered by the replica, "
                        + "\(String(format: "%.1f", after.cacheShare(since: before) * 100)) % by the cache; spends p99 \(Self.ms(spent.percentile(0.99))) ms, \(spent.failed) failed"
                )
                lines.append("    replay lag (\(lag.count) samples): \(lag.summary)")
                lines.append(
                    "    CPU in the phase: primary \(String(format: "%.2f", cpuAfter.primary - cpuBefore.primary)) s, "
                        + "standby \(String(format: "%.2f", cpuAfter.standby - cpuBefore.standby)) s (all its processes: backends, startup, walreceiver)"
                )
            }
            if round > 0 { ratios.append(String(format: "%.2f×", (p99s["replica"] ?? 0) / max(p99s["primary"] ?? 0, 0.001))) }
        }
        lines.append("  status p99 from the replica ÷ from the primary, by round: \(ratios.joined(separator: ", "))")
        return lines
    }

    static func ms(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// Samples the standby's replay lag on the primary every 100 ms (`pg_stat_replication`): how many bytes of WAL it
/// has yet to replay, and `replay_lag` (NULL, counted as 0, when it has nothing to replay).
struct ReplicaLagSampler {
    let url: DatabaseURL
    let logger: Logger

    struct Samples {
        var bytes: [Double] = []
        var milliseconds: [Double] = []
        var count: Int { bytes.count }

        var summary: String {
            guard !bytes.isEmpty else { return "none (no standby streaming)" }
            func figures(_ values: [Double], _ unit: String, scale: Double) -> String {
                String(
                    format: "p50 %.1f, p99 %.1f, max %.1f \(unit)", LoadPhase.percentile(0.5, of: values) / scale,
                    LoadPhase.percentile(0.99, of: values) / scale, (values.max() ?? 0) / scale)
            }
            return "WAL behind \(figures(bytes, "KiB", scale: 1024)); replay_lag \(figures(milliseconds, "ms", scale: 1))"
        }
    }

    /// Waits until the standby is less than 64 KiB of WAL behind (at most two minutes).
    func waitUntilCaughtUp() async throws {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::float8 FROM pg_stat_replication WHERE replay_lsn IS NOT NULL",
                    logger: logger)
                for try await behind in rows.decode(Double.self) where behind < 65_536 { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw CommandFailure("the standby did not catch up within two minutes")
        }
    }

    /// Samples until cancelled, then returns what it sampled.
    func sample() async throws -> Samples {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            var samples = Samples()
            while !Task.isCancelled {
                let rows = try await client.query(
                    """
                    SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::float8,
                        coalesce(extract(epoch FROM replay_lag) * 1000, 0)::float8
                    FROM pg_stat_replication
                    """, logger: logger)
                for try await (bytes, milliseconds) in rows.decode((Double, Double).self) {
                    samples.bytes.append(bytes)
                    samples.milliseconds.append(milliseconds)
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return samples
        }
    }
}
