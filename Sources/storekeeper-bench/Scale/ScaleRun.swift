import Foundation
import Logging
import NIOCore
import PostgresNIO
import StorekeeperRuntime

/// One point of the growth curve: a fresh database, N subscribers loaded, everything measured.
struct ScaleRun {
    let options: ScaleBenchmarkCommand
    let subscribers: Int
    let databaseURL: DatabaseURL
    let loader: ScaleLoader
    let logger: Logger

    func run() async throws -> ScalePoint {
        let tiers = URL(fileURLWithPath: options.tiers).standardizedFileURL.path
        let system = try SystemUnderTest(
            databaseURL: databaseURL, clients: options.connections, environment: ["STOREKEEPER_TIERS": tiers], logger: logger)
        return try await system.stopping { try await measure(system) }
    }

    private func measure(_ system: SystemUnderTest) async throws -> ScalePoint {
        try system.migrate()
        var point = ScalePoint(subscribers: subscribers)
        let emptyBytes = try await system.count("SELECT pg_database_size(current_database())")
        if subscribers > 0 {
            let load = try await loader.load(subscribers: subscribers, now: Date(), url: databaseURL, logger: logger)
            (point.loadSeconds, point.vacuumSeconds, point.checkpointSeconds) = (load.load, load.vacuum, load.checkpoint)
            let total = try await system.count("SELECT pg_database_size(current_database())") - emptyBytes
            // Events, deliveries, jobs and usage answers are held for their retention (30, 7 and 30 days); the rest is
            // kept for good.
            let retained = try await system.count(
                """
                SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind = 'r'
                    AND c.relname IN ('events', 'webhook_deliveries', 'webhook_attempts', 'jobs', 'job_history', 'usage_requests')
                """)
            point.bytesPerSubscriberYear = Double(total) / Double(subscribers)
            point.keptBytesPerSubscriberYear = Double(total - retained) / Double(subscribers)
            point.databaseBytes = total + emptyBytes
        }
        point.migrateSeconds = try timed { try system.migrate() }.seconds
        if !options.skipReplay {
            let replay = try timed { try ChildProcess.run(system.executable, ["replay", "--all"], environment: system.environment) }
            point.replaySeconds = replay.seconds
            point.replayStatus = replay.value.status
            if ![0, 3].contains(replay.value.status) {
                throw CommandFailure("replay --all failed: \(replay.value.output.split(separator: "\n").last.map(String.init) ?? "")")
            }
            point.replayDifferences = replay.value.status == 3
            point.replayed = true
        }
        try await system.startServe()
        try system.startWorker()
        point.startUpJobsSeconds = try await waitForStartUpJobs(system)
        // Each phase its own accounts: the warm status reads 1,000, the cold spends one each, the warm spends 1,000 that
        // spend again and again, the cold status reads the rest (at a million, any subscriber: they meet the others'
        // few thousand by chance only).
        let spends = options.spendRate * (options.seconds + 1)
        let accounts: HotPathAccounts
        if subscribers > 0 {
            let active = try await ScaleLoader.accounts(states: ["active"], count: 1_000 + spends, url: databaseURL, logger: logger)
            let everyone = try await ScaleLoader.accounts(
                states: ["active", "grace_period", "billing_retry", "expired", "refunded", "revoked"], count: 200_000, url: databaseURL,
                logger: logger)
            // Warm spenders spend a dozen times or more (twice the phase's rate over 1,000 accounts): of the top tier
            // (3,000 credits a cycle, no trial cap), so that none runs out and answers 402.
            let topTier = try await ScaleLoader.accounts(states: ["active"], productPrefix: "max.", count: 1_000, url: databaseURL, logger: logger)
            accounts = HotPathAccounts(
                warmReads: Array(active.prefix(1_000)), coldReads: everyone, coldSpenders: Array(active.dropFirst(1_000)), warmSpenders: topTier)
        } else {
            // The empty database's reads and spends are of subscribed accounts too: an account Storekeeper has never
            // seen is one index probe to read and a first grant to spend from, which would flatter the reference.
            // Enough for every phase to have its own: none of the cold reads finds the cache warm, and no cold spend is
            // from an account read moments before.
            let coldReads = HotPathLoad(connections: options.connections, seconds: options.seconds).requestIndices(
                rate: max(1, options.statusRate / 4), withReference: true)
            let baseline = try await subscribeBaseline(system, count: max(Self.baselineAccounts, 2_000 + spends + coldReads))
            accounts = HotPathAccounts(
                warmReads: Array(baseline.prefix(1_000)), coldReads: Array(baseline.dropFirst(2_000 + spends)),
                coldSpenders: Array(baseline.dropFirst(1_000).prefix(spends)), warmSpenders: Array(baseline.dropFirst(1_000 + spends).prefix(1_000)))
        }
        guard !accounts.warmReads.isEmpty, !accounts.coldReads.isEmpty, !accounts.coldSpenders.isEmpty, !accounts.warmSpenders.isEmpty else {
            throw CommandFailure("too few generated accounts to read and spend from")
        }
        // The spends' reference, TPC-B, runs on tables made now and flushed before the phases. Made right before it
        // ran, as they were until 2026-12-01, their half a gigabyte of writes was still being flushed while it ran (its
        // p99 2.4–164 ms from one run at a million to the next). Made after the sizes were taken, they count in none.
        try BenchmarkDatabase.preparePgbenchTables(clients: options.connections, url: databaseURL)
        _ = try BenchmarkDatabase.runTool("psql", ["-qtAc", "CHECKPOINT"], url: databaseURL)
        try await measureHotPath(system, accounts: accounts, into: &point)
        let started = Date()
        let bodies = try (0..<options.notifications).map { index in
            try system.subscribe(index, at: started.addingTimeInterval(Double(index) / 1000)).body
        }
        point.intake = try await system.send(bodies, clients: options.connections, rate: nil).rate
        point.appliedPerSecond = try await system.waitUntilApplied(options.notifications, receivedSince: started)
        return point
    }

    /// Open loop at the fixed rates: /healthz (the reference), status of accounts never read (cold: each request a
    /// different account, so the cache cannot answer and each is a database read — at a quarter of the status rate,
    /// which at N = 0 already saturates two cores), status of 1,000 accounts read once before (warm), spends from
    /// accounts spending once each (cold: at a million, untouched since the load) and from 1,000 accounts spending again
    /// and again (warm).
    private func measureHotPath(_ system: SystemUnderTest, accounts: HotPathAccounts, into point: inout ScalePoint) async throws {
        let load = HotPathLoad(connections: options.connections, seconds: options.seconds)
        let key = [("Authorization", "Bearer bench")]
        point.health = try await load.pace(system, rate: options.statusRate) { _ in LoadRequest(path: "/healthz", method: .GET) }
        let coldReads = accounts.coldReads
        let beforeCold = await system.statusReads()
        let ioBeforeCold = try await PhaseIO.settled(system)
        let healthz = LoadRequest(path: "/healthz", method: .GET)
        point.statusCold = try await load.pace(system, rate: max(1, options.statusRate / 4), reference: healthz) { index in
            LoadRequest(path: "/v1/accounts/\(coldReads[index % coldReads.count])/status", method: .GET, headers: key)
        }
        let afterCold = await system.statusReads()
        point.statusColdIO = try await PhaseIO.settled(system).perRequest(
            since: ioBeforeCold, requests: load.requestsSent(rate: max(1, options.statusRate / 4)))
        point.coldFromCache = afterCold.cacheShare(since: beforeCold)
        let warm = accounts.warmReads
        _ = try await load.pace(system, rate: options.statusRate) { index in
            LoadRequest(path: "/v1/accounts/\(warm[index % warm.count])/status", method: .GET, headers: key)
        }
        let beforeWarm = await system.statusReads()
        point.statusWarm = try await load.pace(system, rate: options.statusRate, reference: healthz) { index in
            LoadRequest(path: "/v1/accounts/\(warm[index % warm.count])/status", method: .GET, headers: key)
        }
        let afterWarm = await system.statusReads()
        point.warmFromCache = afterWarm.cacheShare(since: beforeWarm)
        let spend: @Sendable (String) -> LoadRequest = { account in
            LoadRequest(
                path: "/v1/accounts/\(account)/usage", method: .POST, headers: key + [("Content-Type", "application/json")],
                body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(UUID())"}"#))
        }
        let ioBeforeSpends = try await PhaseIO.settled(system)
        let cold = accounts.coldSpenders
        point.spend = try await load.pace(system, rate: options.spendRate) { index in spend(cold[index % cold.count]) }
        point.spendColdIO = try await PhaseIO.settled(system).perRequest(
            since: ioBeforeSpends, requests: load.requestsSent(rate: options.spendRate))
        point.tpcb = try tpcb()
        // Warm: the same 1,000 accounts spend again and again, as an app's active customers do; after one pass their
        // pages are in memory.
        let spenders = accounts.warmSpenders
        _ = try await load.pace(system, rate: options.spendRate) { index in spend(spenders[index % spenders.count]) }
        let ioBeforeWarmSpends = try await PhaseIO.settled(system)
        point.spendWarm = try await load.pace(system, rate: options.spendRate) { index in spend(spenders[index % spenders.count]) }
        point.spendWarmIO = try await PhaseIO.settled(system).perRequest(
            since: ioBeforeWarmSpends, requests: load.requestsSent(rate: options.spendRate))
        point.tpcbWarm = try tpcb()
    }

    /// The spends' reference, run after each spend phase once its I/O readings have settled (about 11 s; `serve`
    /// and `work` idle): durable TPC-B commits at the spends' rate on the same cluster. Its tables are read into the
    /// page cache first (`pg_prewarm`): at a million the load and the phases push them out, and DAMON pages out what a
    /// minute left untouched, and a reference reading its pages from the disk would flatter the spends.
    private func tpcb() throws -> LoadPhase {
        let tables = [
            "pgbench_accounts", "pgbench_accounts_pkey", "pgbench_branches", "pgbench_branches_pkey", "pgbench_tellers", "pgbench_tellers_pkey",
            "pgbench_history",
        ]
        _ = try BenchmarkDatabase.runTool(
            "psql",
            [
                "-qtAc",
                "CREATE EXTENSION IF NOT EXISTS pg_prewarm; SELECT count(pg_prewarm(c, 'read')) FROM unnest(ARRAY['\(tables.joined(separator: "', '"))']::regclass[]) AS c",
            ], url: databaseURL)
        return try BenchmarkDatabase.pacedTPCB(
            rate: options.spendRate, clients: options.connections, seconds: options.seconds, url: databaseURL)
    }

    /// Waits until `work` has no job running or due, three readings in a row two seconds apart, for at most
    /// `--settle-seconds`: right after a load, the first runs of the periodic jobs read whole tables (the
    /// signed-payload retention's scan of `notifications`) and would otherwise fall into the measured phases. Readings
    /// count only from 70 s after `work` was started: it takes a moment to start, and its minute schedules enqueue at
    /// the next minute. Returns the seconds waited; `nil` when the limit was reached first. A job that works through a
    /// backlog a bounded run at a time is idle between its runs, so this could not wait for it: load.sql leaves none
    /// (the usage rollup's position is past the loaded ledger; docs/capacity.md, "A settled server at a million").
    private func waitForStartUpJobs(_ system: SystemUnderTest) async throws -> Double? {
        let started = ContinuousClock.now
        var idleReadings = 0
        while ContinuousClock.now - started < .seconds(options.settleSeconds) {
            let busy = try await system.count("SELECT count(*) FROM jobs WHERE state = 'running' OR (state = 'available' AND run_at <= now())")
            idleReadings = busy == 0 && ContinuousClock.now - started >= .seconds(70) ? idleReadings + 1 : 0
            if idleReadings == 3 { return (ContinuousClock.now - started).seconds }
            try await Task.sleep(for: .seconds(2))
        }
        return options.settleSeconds == 0 ? 0 : nil
    }

    /// Subscribed accounts the reference point reads and spends from, at least (more when the cold phase reads more).
    static let baselineAccounts = 10_000

    /// Subscribes `count` new accounts (pro.monthly, through the intake) and waits until they are applied.
    private func subscribeBaseline(_ system: SystemUnderTest, count: Int) async throws -> [String] {
        let started = Date()
        let accounts = (0..<count).map { _ in UUID() }
        // Past the originalTransactionIds of the applied/s phase (0 ..< --notifications).
        let bodies = try accounts.enumerated().map { index, account in
            try system.subscribe(10_000_000 + index, account: account, at: started.addingTimeInterval(Double(index) / 1000)).body
        }
        _ = try await system.send(bodies, clients: options.connections, rate: nil)
        _ = try await system.waitUntilApplied(count, receivedSince: started)
        // As the loaded points are analysed after their load: tables filled within seconds have no statistics until
        // autovacuum's next round, and status reads planned blind fell behind 1,250 a second (measured: p50 24 s).
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            _ = try await client.query("VACUUM (ANALYZE)", logger: logger)
        }
        return accounts.map { $0.uuidString.lowercased() }
    }

    private func timed<Value>(_ body: () throws -> Value) throws -> (value: Value, seconds: Double) {
        let started = ContinuousClock.now
        let value = try body()
        return (value, (ContinuousClock.now - started).seconds)
    }
}

extension SystemUnderTest.SendPhase {
    var rate: Double { Double(accepted) / max(seconds, 0.001) }
}

/// The accounts the hot-path phases read and spend from, each phase its own.
struct HotPathAccounts {
    /// 1,000 accounts read again and again (warm status).
    var warmReads: [String]
    /// Accounts read once each (cold status).
    var coldReads: [String]
    /// Active accounts that spend once each (cold spends).
    var coldSpenders: [String]
    /// 1,000 accounts with credits enough to spend again and again (warm spends).
    var warmSpenders: [String]
}
