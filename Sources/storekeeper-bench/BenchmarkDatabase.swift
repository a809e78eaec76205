import Foundation
import Logging
import PostgresNIO
import StorekeeperRuntime

/// Where a benchmark runs: a fresh database on `--database-url`'s server (dropped afterwards), or — without one — a
/// private throwaway cluster with PostgreSQL's default (durable) settings unless told others, its WAL warmed like a
/// running server's (see ``warmWAL(url:logger:)``), removed afterwards.
enum BenchmarkDatabase {
    /// - Parameters:
    ///   - coldWAL: leave the private cluster's WAL as `initdb` made it: every WAL segment the run needs is created
    ///     during the run.
    ///   - settings: the private cluster's server settings beside PostgreSQL's defaults (`name=value`); a server on
    ///     `url` keeps its own.
    static func with<Result: Sendable>(
        url text: String?, coldWAL: Bool = false, settings: [String] = [], logger: Logger, _ body: (DatabaseURL) async throws -> Result
    ) async throws -> Result {
        if let text {
            let server = try DatabaseURL(parsing: text)
            let name = "storekeeper_bench_\(UInt32.random(in: 0...UInt32.max))"
            _ = try await PostgresClient.withRunning(server.clientConfiguration(maximumConnections: 1), logger: logger) {
                try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger)
            }
            var url = server
            url.database = name
            let drop = {
                try? await PostgresClient.withRunning(server.clientConfiguration(maximumConnections: 1), logger: logger) {
                    try await $0.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
                }
            }
            do {
                let result = try await body(url)
                _ = await drop()
                return result
            } catch {
                _ = await drop()
                throw error
            }
        }
        return try await withPrivateCluster(named: "storekeeper-bench", settings: settings) { _, url in
            if !coldWAL { try await warmWAL(url: url, logger: logger) }
            return try await body(url)
        }
    }

    /// Runs `body` with a throwaway private cluster, stopped and removed afterwards — or at once if the benchmark is
    /// interrupted (``Interruption``).
    static func withPrivateCluster<Result: Sendable>(
        named prefix: String, settings: [String] = [], _ body: (PrivateCluster, DatabaseURL) async throws -> Result
    ) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        let cluster = try PrivateCluster(directory: directory)
        let url: DatabaseURL
        do {
            url = try cluster.start(settings: settings)
        } catch {
            // A setting the server refuses fails here: initdb's tens of megabytes go, the log the error names stays.
            try? FileManager.default.removeItem(at: directory.appendingPathComponent("data"))
            throw error
        }
        let interrupted = Interruption.register {
            cluster.stop(immediately: true)
            try? FileManager.default.removeItem(at: directory)
        }
        defer {
            Interruption.done(interrupted)
            cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        return try await body(cluster, url)
    }

    /// WAL segments a warmed cluster can reuse: 1 GiB, PostgreSQL's default `max_wal_size`, more than a default
    /// end-to-end run writes.
    static let warmedWALSegments = 64

    /// Gives a new cluster the WAL segments a running server has. A new cluster has none to reuse, so each 16 MiB
    /// segment is created — zero-filled and flushed while every commit waits — the first time it is needed: under
    /// load a stall of 15–160 ms every few seconds, which a server that has run through one checkpoint never sees
    /// (its checkpoints recycle segments for reuse; docs/capacity.md). This switches through
    /// ``warmedWALSegments`` segments and checkpoints, which recycles them.
    static func warmWAL(url: DatabaseURL, logger: Logger) async throws {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            for _ in 0..<warmedWALSegments {
                // pg_switch_wal() moves on only from a segment with a record in it.
                try await client.query(
                    "SELECT pg_switch_wal() FROM (SELECT pg_logical_emit_message(false, 'storekeeper.warm', '')) AS record",
                    logger: logger)
            }
            try await client.query("CHECKPOINT", logger: logger)
        }
    }

    /// pgbench on `url`'s cluster with `clients` clients for about `seconds`: tps and average latency (ms). `mode`
    /// `["-S"]` is select-only, `[]` TPC-B. Its tables are at a scale of `clients`, as pgbench's documentation asks: at
    /// scale 1 every TPC-B transaction updates the one branch row, and the reference measures a row lock, not the
    /// cluster (it read about half of the honest figure). The tables are kept between calls at the same scale, so
    /// their set-up is not timed twice. The length is set by transactions (`-t`) from a short calibrating run: `-T`
    /// relies on SIGALRM, which a child of this process may never see.
    static func pgbench(_ mode: [String], clients: Int, seconds: Int, url: DatabaseURL) throws -> (tps: Double, latency: Double) {
        try preparePgbenchTables(clients: clients, url: url)
        func run(transactions: Int) throws -> (tps: Double, latency: Double) {
            let output = try runTool(
                "pgbench", ["-n", "-c", String(clients), "-j", "2", "-t", String(transactions)] + mode, url: url)
            func value(_ prefix: String) -> Double? {
                output.split(separator: "\n").first { $0.hasPrefix(prefix) }
                    .flatMap { Double($0.dropFirst(prefix.count).prefix { $0 != " " }) }
            }
            guard let tps = value("tps = "), let latency = value("latency average = ") else {
                throw CommandFailure("could not read pgbench's figures")
            }
            return (tps, latency)
        }
        let calibration = try run(transactions: 50)
        return try run(transactions: max(50, Int(calibration.tps * Double(seconds) / Double(clients))))
    }

    /// pgbench's tables at a scale equal to the client count (pgbench's own advice: at scale 1 every TPC-B transaction
    /// updates the one branch row, and the reference measures a row lock), initialised once and kept between phases.
    static func preparePgbenchTables(clients: Int, url: DatabaseURL) throws {
        let scale = max(clients, 1)
        let branches = try? runTool("psql", ["-tAc", "SELECT count(*) FROM pgbench_branches"], url: url)
        if branches?.trimmingCharacters(in: .whitespacesAndNewlines) != String(scale) {
            _ = try runTool("pgbench", ["-i", "-q", "-s", String(scale)], url: url)
        }
    }

    /// TPC-B at a fixed `rate`, open loop (`pgbench -R`, tables at the scale of ``pgbench(_:clients:seconds:url:)``):
    /// each transaction's latency from when it was scheduled (its log's time plus its schedule lag), the first second
    /// not counted — the reference for spends at the same rate, on the same cluster and disk.
    static func pacedTPCB(rate: Int, clients: Int, seconds: Int, url: DatabaseURL) throws -> LoadPhase {
        try preparePgbenchTables(clients: clients, url: url)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-pgbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let started = Date().timeIntervalSince1970
        _ = try runTool(
            "pgbench",
            // -t, not -T: see pgbench(_:clients:seconds:url:). At the rate, clients × t transactions take seconds + 1.
            [
                "-n", "-c", String(clients), "-j", "2", "-t", String(max(1, max(rate, 1) * (seconds + 1) / clients)), "-R", String(max(rate, 1)),
                "-l",
                "--log-prefix", folder.appendingPathComponent("log").path,
            ],
            url: url)
        var phase = LoadPhase(seconds: Double(seconds))
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            // client_id transaction_no time script_no time_epoch time_us schedule_lag
            for line in try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 7, let time = Double(fields[2]), let epoch = Double(fields[4]), let lag = Double(fields[6]) else { continue }
                guard epoch >= started + 1 else { continue }
                phase.answered += 1
                phase.latencies.append((time + lag) / 1000)
            }
        }
        guard phase.answered > 0 else { throw CommandFailure("pgbench -R wrote no transaction log") }
        return phase
    }

    /// Runs a PostgreSQL client program (pgbench, psql) against `url`; returns its standard output.
    static func runTool(_ name: String, _ arguments: [String], url: DatabaseURL) throws -> String {
        guard let bin = PrivateCluster.findBinDirectory() else { throw CommandFailure("\(name) not found (install postgresql)") }
        var environment: [String: String] = [:]
        if let password = url.password { environment["PGPASSWORD"] = password }
        let result = try ChildProcess.run(
            bin.appendingPathComponent(name).path,
            ["-h", url.host, "-p", String(url.port), "-U", url.username] + arguments + [url.database], environment: environment)
        let text = result.output
        guard result.status == 0 else {
            throw CommandFailure("\(name) failed: \(text.split(separator: "\n").last.map(String.init) ?? "")")
        }
        return text
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
