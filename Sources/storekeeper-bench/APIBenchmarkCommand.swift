import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import StorekeeperRuntime

struct APIBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "The app's hot path: status reads and spends against serve, with the same run's references.",
        discussion: """
            Starts `serve` and `work` on a throwaway PostgreSQL, subscribes --accounts accounts (pro.monthly, 1,000 \
            credits each), then for --seconds each drives --connections concurrent clients at: `GET /healthz` (the \
            server's own floor), `GET /v1/tiers`, `GET /v1/accounts/{id}/status`, `POST /v1/accounts/{id}/usage` (1 \
            credit, a new idempotency key each), on random accounts, and hold → settle pairs (a hold of 2 credits, then \
            its settle for 1 by the key it was taken with, back to back on each connection), the spends and the pairs \
            three times in turn: each round's pairs/s over the spends/s just before, the median round quoted. \
            On the same cluster it runs pgbench select-only \
            and TPC-B (durable) with the same number of clients. Prints rate, p50 and p99 of each, and the ratios the \
            targets are set in: status and tiers to /healthz, spends to TPC-B. Then open loop (requests on a fixed \
            schedule, latency from when each was due) at 25, 50 and 75 % of the maxima: /healthz, status (with /healthz \
            sent beside it on every eighth connection, and the share of reads served from the cache), /healthz again, \
            spends; and pgbench TPC-B at each spend rate (`pgbench -R`) as the spends' reference.
            """)

    @Option(help: "Subscribed accounts.") var accounts = 500
    @Option(help: "Concurrent clients.") var connections = 32
    @Option(help: "Seconds per phase.") var seconds = 5
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    /// Spend phases and pair phases, in turn.
    static let pairRounds = 3

    func validate() throws {
        guard accounts > 0, connections > 0, seconds > 0 else { throw ValidationError("--accounts, --connections and --seconds must be positive") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, logger: logger) { url in
            let system = try SystemUnderTest(databaseURL: url, clients: connections, logger: logger)
            try system.migrate()
            do {
                try await system.startServe()
                _ = try system.startWorker()
                let accountIds = try await system.subscribeAccounts(accounts, clients: connections)
                let key = [("Authorization", "Bearer bench")]
                let hotPath = HotPathLoad(connections: connections, seconds: seconds)
                // Each phase's CPU too (serve's and the cluster's): it moves far less than the rates on this machine.
                let (servePid, postmaster) = (system.serve?.pid, try await ProcessCPU.postmaster(of: system))
                let (warmUp, counted) = (Duration.seconds(HotPathLoad.warmUpSeconds), Duration.seconds(seconds))
                let health = try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                    try await hotPath.load(system) { _ in LoadRequest(path: "/healthz", method: .GET) }
                }
                let tiers = try await hotPath.load(system) { _ in LoadRequest(path: "/v1/tiers", method: .GET) }
                let status = try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                    try await hotPath.load(system) { _ in
                        LoadRequest(path: "/v1/accounts/\(accountIds.randomElement()!)/status", method: .GET, headers: key)
                    }
                }
                let spendRequest: @Sendable (Int) -> LoadRequest = { _ in
                    let body = ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(UUID())"}"#)
                    return LoadRequest(
                        path: "/v1/accounts/\(accountIds.randomElement()!)/usage", method: .POST,
                        headers: key + [("Content-Type", "application/json")], body: body)
                }
                // Holds as AI work takes them: each connection holds 2 credits, then settles 1 of them by the key it held
                // with (its n-th request: even a hold, odd that hold's settle), back to back.
                let clients = connections
                let pairRequest: @Sendable (String) -> @Sendable (Int) -> LoadRequest = { run in
                    { index in
                        let (connection, step) = (index % clients, index / clients)
                        let account = accountIds[(connection * 7919 + step / 2) % accountIds.count]
                        let key = "pair-\(run)-\(connection)-\(step / 2)"
                        let headers = [("Authorization", "Bearer bench"), ("Content-Type", "application/json")]
                        if step % 2 == 0 {
                            let body = ByteBuffer(string: #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "\#(key)"}"#)
                            return LoadRequest(path: "/v1/accounts/\(account)/holds", method: .POST, headers: headers, body: body)
                        }
                        return LoadRequest(
                            path: "/v1/accounts/\(account)/holds/\(key)/settle", method: .POST, headers: headers,
                            body: ByteBuffer(string: #"{"amount": 1}"#))
                    }
                }
                // Spends, then pairs, three times over, each pair phase set against the spends just before it, and the
                // median round quoted: this machine's pace swings by a fifth from one phase to the next, and one spend
                // phase with one pair phase gave ratios from 0.35× to 0.53× over six runs of one build.
                var rounds: [(spend: LoadPhase, pairs: LoadPhase)] = []
                for _ in 0..<Self.pairRounds {
                    let spend = try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                        try await hotPath.load(system, spendRequest)
                    }
                    let pairs = try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                        try await hotPath.load(system, pairRequest(String(UUID().uuidString.prefix(8))))
                    }
                    rounds.append((spend, pairs))
                }
                let spend = rounds[0].spend
                // Open loop: requests on a fixed schedule at shares of the closed-loop maxima, latency from when each was
                // due. Status and /healthz at shares of /healthz's maximum; spends, bounded by durable commits, at shares
                // of their own.
                var paced: [PacedPhase] = []
                for share in [0.25, 0.5, 0.75] {
                    let rate = Int(health.rate * share)
                    // serve's CPU a request at the same rate for both (the share of a request a wake-up costs moves with
                    // the rate, so only phases at one rate compare).
                    paced.append(
                        PacedPhase(
                            name: "GET /healthz", share: share, rate: rate,
                            phase: try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                                try await hotPath.pace(system, rate: rate) { _ in LoadRequest(path: "/healthz", method: .GET) }
                            }))
                    let before = await system.statusReads()
                    var status = PacedPhase(
                        name: "GET /v1/accounts/{id}/status", share: share, rate: rate,
                        phase: try await PhaseCPU.measure(serve: servePid, postmaster: postmaster, warmUp: warmUp, seconds: counted) {
                            try await hotPath.pace(system, rate: rate, reference: LoadRequest(path: "/healthz", method: .GET)) { _ in
                                LoadRequest(path: "/v1/accounts/\(accountIds.randomElement()!)/status", method: .GET, headers: key)
                            }
                        })
                    let after = await system.statusReads()
                    status.fromCache = after.cacheShare(since: before)
                    paced.append(status)
                    // /healthz again right after: how far one phase's tail moves from the next on a shared machine.
                    paced.append(
                        PacedPhase(
                            name: "GET /healthz, again", share: share, rate: rate,
                            phase: try await hotPath.pace(system, rate: rate) { _ in LoadRequest(path: "/healthz", method: .GET) }))
                    let spendRate = Int(spend.rate * share)
                    paced.append(
                        PacedPhase(
                            name: "POST /v1/accounts/{id}/usage", share: share, rate: spendRate,
                            phase: try await hotPath.pace(system, rate: spendRate, spendRequest)))
                }
                await system.stop()
                let selectOnly = try BenchmarkDatabase.pgbench(["-S"], clients: connections, seconds: seconds, url: url)
                let tpcb = try BenchmarkDatabase.pgbench([], clients: connections, seconds: seconds, url: url)
                // The spends' reference at each of their rates: durable TPC-B commits on the same cluster and disk.
                for spends in paced where spends.name.contains("usage") {
                    paced.append(
                        PacedPhase(
                            name: "pgbench TPC-B (reference)", share: spends.share, rate: spends.rate,
                            phase: try BenchmarkDatabase.pacedTPCB(rate: spends.rate, clients: connections, seconds: seconds, url: url)))
                }
                return self.report(
                    health: health, tiers: tiers, status: status, rounds: rounds, paced: paced, selectOnly: selectOnly, tpcb: tpcb)
            } catch {
                await system.stop()
                throw error
            }
        }
        report.print(json: json)
    }

    /// One open-loop phase: a share of a closed-loop maximum, the rate it came to, what it measured.
    struct PacedPhase {
        var name: String
        var share: Double
        var rate: Int
        var phase: LoadPhase
        /// For status: the share of its reads (warm-up included) answered from `serve`'s cache.
        var fromCache: Double?
    }

    /// At 50 %: status p99 over the p99 of `/healthz` sent beside it in the same phase, measured just before it, and
    /// just after.
    func healthRatios(_ paced: [PacedPhase]) -> (beside: Double, before: Double, after: Double)? {
        let atHalf = paced.filter { $0.share == 0.5 }
        guard let status = atHalf.first(where: { $0.name.contains("status") })?.phase,
            let before = atHalf.first(where: { $0.name == "GET /healthz" })?.phase.percentile(0.99),
            let after = atHalf.first(where: { $0.name.contains("again") })?.phase.percentile(0.99)
        else { return nil }
        let p99 = status.percentile(0.99)
        return (p99 / max(status.referencePercentile(0.99), 0.001), p99 / max(before, 0.001), p99 / max(after, 0.001))
    }

    func report(
        health: LoadPhase, tiers: LoadPhase, status: LoadPhase, rounds: [(spend: LoadPhase, pairs: LoadPhase)], paced: [PacedPhase],
        selectOnly: (tps: Double, latency: Double), tpcb: (tps: Double, latency: Double)
    ) -> BenchmarkReport {
        let spend = rounds[0].spend
        // Each round's pairs/s over the spends/s just before them; the median round is quoted, the latencies of all.
        let ratios = rounds.map { $0.pairs.rate / 2 / max($0.spend.rate, 0.001) }
        let median = rounds.indices.sorted { ratios[$0] < ratios[$1] }[rounds.count / 2]
        var pairs = LoadPhase()
        for round in rounds {
            pairs.latencies += round.pairs.latencies
            pairs.failed += round.pairs.failed
        }
        let pairRate = rounds[median].pairs.rate / 2
        func line(_ name: String, _ phase: LoadPhase, _ reference: String) -> String {
            "  \(name.padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(format: "%7.0f", phase.rate))/s  p50 \(String(format: "%6.2f", phase.percentile(0.5))) ms  "
                + "p99 \(String(format: "%6.2f", phase.percentile(0.99))) ms  \(phase.failed) failed  \(reference)"
        }
        let ratio = { (value: Double, reference: Double) in String(format: "%.2f×", value / max(reference, 0.001)) }
        // CPU a request in the median round: a spend's, and a hold's or a settle's (half a pair).
        let spendCPU = rounds[median].spend.cpu?.microsecondsPerRequest(rounds[median].spend)
        let pairCPU = rounds[median].pairs.cpu?.microsecondsPerRequest(rounds[median].pairs)
        // A cached status read against /healthz, both closed loop: what the status path itself costs serve.
        let healthCPU = health.cpu?.microsecondsPerRequest(health)
        let statusCPU = status.cpu?.microsecondsPerRequest(status)
        // And open loop at 25 %, below the knee: the status phase's CPU over all its requests, the /healthz beside
        // them included.
        let quarter = paced.filter { $0.share == 0.25 }
        let pacedHealthCPU = quarter.first { $0.name == "GET /healthz" }.flatMap { $0.phase.cpu?.microsecondsPerRequest($0.phase).serve }
        let pacedStatusCPU = quarter.first { $0.name.contains("status") }.flatMap { paced in
            paced.phase.cpu.map { $0.serve / Double(max(paced.phase.answered + paced.phase.reference.count, 1)) * 1e6 }
        }
        func statusCPULine() -> String? {
            guard let healthCPU, let statusCPU, let pacedHealthCPU, let pacedStatusCPU else { return nil }
            return "  CPU a request, serve: closed loop /healthz " + String(format: "%.1f µs", healthCPU.serve) + ", status "
                + String(format: "%.1f µs (%.2f×)", statusCPU.serve, statusCPU.serve / max(healthCPU.serve, 0.001))
                + "; open loop at 25 % /healthz " + String(format: "%.1f µs", pacedHealthCPU) + ", status "
                + String(format: "%.1f µs (%.2f×)", pacedStatusCPU, pacedStatusCPU / max(pacedHealthCPU, 0.001))
        }
        func cpuLine() -> String {
            guard let spendCPU, let pairCPU else { return "  CPU a request: not measured (PostgreSQL is not on this machine)" }
            return "  CPU a request, serve + PostgreSQL (median round): spend " + String(format: "%.0f + %.0f µs", spendCPU.serve, spendCPU.database)
                + ", hold or settle " + String(format: "%.0f + %.0f µs", pairCPU.serve, pairCPU.database) + " ("
                + String(format: "%.2f×", (pairCPU.serve + pairCPU.database) / max(spendCPU.serve + spendCPU.database, 0.001)) + ")"
        }
        var report = BenchmarkReport()
        report.lines =
            [
                "api: \(accounts) subscribed accounts, \(connections) clients, \(seconds) s a phase, serve + work and PostgreSQL on this machine",
                line("GET /healthz (reference)", health, ""),
                line("GET /v1/tiers", tiers, "\(ratio(tiers.rate, health.rate)) /healthz (target ≥ 0.8×)"),
                line("GET /v1/accounts/{id}/status", status, "\(ratio(status.rate, health.rate)) /healthz (target ≥ 0.5×, p99 ≤ 5 ms)"),
                line("POST /v1/accounts/{id}/usage", spend, "\(ratio(spend.rate, tpcb.tps)) TPC-B (target ≥ 0.75×, p99 ≤ 30 ms)"),
                "  hold → settle pairs                " + String(format: "%7.0f", pairRate) + "/s  (each request: p50 "
                    + String(format: "%.2f", pairs.percentile(0.5)) + " ms, p99 " + String(format: "%.2f", pairs.percentile(0.99))
                    + " ms)  \(pairs.failed) failed  "
                    + String(format: "%.2f×", ratios[median]) + " the spends/s just before (target ≥ 0.5×, p99 ≤ 30 ms); rounds "
                    + ratios.map { String(format: "%.2f×", $0) }.joined(separator: ", ") + " of "
                    + rounds.map { String(format: "%.0f", $0.spend.rate) }.joined(separator: ", ") + " spends/s",
                cpuLine(),
            ]
            + [statusCPULine()].compactMap { $0 }
            + [
                "  pgbench select-only (reference, scale \(connections)) \(String(format: "%7.0f", selectOnly.tps))/s  average \(String(format: "%.2f", selectOnly.latency)) ms",
                "  pgbench TPC-B, durable (reference, scale \(connections)) \(String(format: "%7.0f", tpcb.tps))/s  average \(String(format: "%.2f", tpcb.latency)) ms",
                "open loop (latency from when each request was due):",
            ]
            + paced.map { paced in
                "  \(paced.name.padding(toLength: 30, withPad: " ", startingAt: 0)) \(Int(paced.share * 100))% = \(String(format: "%6d", paced.rate))/s  "
                    + "p50 \(String(format: "%6.2f", paced.phase.percentile(0.5))) ms  p99 \(String(format: "%6.2f", paced.phase.percentile(0.99))) ms  "
                    + "p99.9 \(String(format: "%6.2f", paced.phase.percentile(0.999))) ms  \(paced.phase.failed) failed"
                    + (paced.fromCache.map { String(format: "  %.1f %% from the cache", $0 * 100) } ?? "")
                    + (paced.phase.reference.isEmpty ? "" : String(format: "; /healthz beside it p99 %.2f ms", paced.phase.referencePercentile(0.99)))
            }
            + (healthRatios(paced).map { beside, before, after in
                [
                    "  at 50 %: status p99 \(String(format: "%.2f", beside))× /healthz p99 beside it (target ≤ 2×); \(String(format: "%.2f", before))× before it, \(String(format: "%.2f", after))× after it"
                ]
            } ?? [])
            + paced.filter { $0.share == 0.5 && $0.name.contains("usage") }.compactMap { spends in
                paced.first { $0.share == 0.5 && $0.name.contains("pgbench") }.map { tpcb in
                    "  at 50 %: spend p99 \(String(format: "%.2f", spends.phase.percentile(0.99))) ms (target ≤ 20 ms); "
                        + "TPC-B at the same rate p99 \(String(format: "%.2f", tpcb.phase.percentile(0.99))) ms"
                }
            }
        report.fields =
            [
                ("benchmark", .text("api")), ("healthzPerSecond", .integer(Int(health.rate))), ("healthzP99Ms", .number(health.percentile(0.99))),
                ("tiersPerSecond", .integer(Int(tiers.rate))), ("statusPerSecond", .integer(Int(status.rate))),
                ("statusP50Ms", .number(status.percentile(0.5))), ("statusP99Ms", .number(status.percentile(0.99))),
                ("statusRatio", .number(status.rate / max(health.rate, 0.001))), ("spendPerSecond", .integer(Int(spend.rate))),
                ("spendP50Ms", .number(spend.percentile(0.5))), ("spendP99Ms", .number(spend.percentile(0.99))),
                ("spendRatio", .number(spend.rate / max(tpcb.tps, 0.001))),
                ("holdSettlePairsPerSecond", .integer(Int(pairRate))), ("holdSettleP99Ms", .number(pairs.percentile(0.99))),
                ("holdSettleFailed", .integer(pairs.failed)), ("holdSettleRatio", .number(ratios[median])),
                ("holdSettleRatioMin", .number(ratios.min() ?? 0)), ("holdSettleRatioMax", .number(ratios.max() ?? 0)),
                ("spendServeMicros", spendCPU.map { .number($0.serve) } ?? .null),
                ("spendDatabaseMicros", spendCPU.map { .number($0.database) } ?? .null),
                ("holdSettleServeMicros", pairCPU.map { .number($0.serve) } ?? .null),
                ("holdSettleDatabaseMicros", pairCPU.map { .number($0.database) } ?? .null),
                ("tiersRatio", .number(tiers.rate / max(health.rate, 0.001))), ("pgbenchSelectOnly", .integer(Int(selectOnly.tps))),
                ("pgbenchTPCB", .integer(Int(tpcb.tps))),
            ]
            + paced.flatMap { paced -> [(String, BenchmarkReport.BenchmarkValue)] in
                let key =
                    (paced.name.contains("again")
                        ? "healthzAgain"
                        : paced.name.contains("healthz")
                            ? "healthz"
                            : paced.name.contains("status")
                                ? "status"
                                : paced.name.contains("pgbench") ? "tpcb" : "spend")
                    + "Paced\(Int(paced.share * 100))"
                return [(key + "P99Ms", .number(paced.phase.percentile(0.99))), (key + "P999Ms", .number(paced.phase.percentile(0.999)))]
                    + (paced.phase.reference.isEmpty ? [] : [(key + "HealthzBesideP99Ms", .number(paced.phase.referencePercentile(0.99)))])
            }
        let reads: [(String, BenchmarkReport.BenchmarkValue)] = [
            ("healthzServeMicros", healthCPU.map { .number($0.serve) } ?? .null), ("statusServeMicros", statusCPU.map { .number($0.serve) } ?? .null),
            ("healthzPaced25ServeMicros", pacedHealthCPU.map { .number($0) } ?? .null),
            ("statusPaced25ServeMicros", pacedStatusCPU.map { .number($0) } ?? .null),
        ]
        report.fields += reads + [Autogroups.field]
        report.lines.append(Autogroups.line)
        return report
    }
}
