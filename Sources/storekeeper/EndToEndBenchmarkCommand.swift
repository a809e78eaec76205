import AppStoreModels
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LocalSigning
import Logging
import NIOCore
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Synchronization

struct EndToEndBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Distinct signed notifications POSTed over HTTP to `serve` + `work` processes until every one is applied.",
        discussion: """
            Starts `storekeeper serve` and `storekeeper work` as processes on a throwaway PostgreSQL (a private cluster, \
            or a fresh database on --database-url's server), signs --notifications distinct notifications with a local \
            Apple-shaped chain, POSTs them from --clients concurrent clients as fast as they are answered (intake/s, \
            latency), waits until all are applied (applied/s), then sends at a steady --rate for --steady-seconds \
            (latency at that rate), and reports the processes' peak resident memory.
            """)

    @Option(help: "Notifications in the burst.") var notifications = 20_000
    @Option(help: "Concurrent HTTP clients.") var clients = 32
    @Option(help: "Requests per second of the steady phase.") var rate = 500
    @Option(help: "Length of the steady phase in seconds.") var steadySeconds = 10
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Start `work` only after the burst is in: intake and applying measured apart.") var sequential = false
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard notifications > 0, clients > 0, rate > 0, steadySeconds >= 0 else {
            throw ValidationError("--notifications, --clients and --rate must be positive, --steady-seconds not negative")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, logger: logger) { url in
            try await EndToEndRun(options: self, databaseURL: url, logger: logger).run()
        }
        report.print(json: json)
    }
}

/// One end-to-end run: processes up, burst, drain, steady phase, processes down.
struct EndToEndRun {
    let options: EndToEndBenchmarkCommand
    let databaseURL: DatabaseURL
    let logger: Logger
    let bundleId = "com.example.bench"

    func run() async throws -> BenchmarkReport {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-e2e-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try LocalSigningChain.generate()
        try chain.save(to: directory)
        let port = try Self.freePort()
        let environment = [
            "DATABASE_URL": databaseURL.urlString, "STOREKEEPER_BUNDLE_ID": bundleId, "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": directory.appendingPathComponent("root.pem").path,
            "STOREKEEPER_API_KEYS": "bench", "STOREKEEPER_PORT": String(port), "STOREKEEPER_LOG_FORMAT": "json",
        ]
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let migrate = try ChildProcess.run(executable, ["migrate"], environment: environment)
        guard migrate.status == 0 else { throw CommandFailure("migrate failed: \(migrate.output)") }

        let signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: bundleId)
        let steadyCount = options.rate * options.steadySeconds
        let start = Date()
        let bodies: [ByteBuffer] = try (0..<(options.notifications + steadyCount)).map { index in
            let subscription = SimulatedEvent.Subscription(
                originalTransactionId: String(3_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(), bundleId: bundleId)
            let event = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: start.addingTimeInterval(Double(index) / 1000))
            return ByteBuffer(data: try signer.requestBody(for: event))
        }

        let serve = try ChildProcess.spawn(executable, ["serve"], environment: environment)
        var work = options.sequential ? nil : try ChildProcess.spawn(executable, ["work"], environment: environment)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: options.clients)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let base = "http://127.0.0.1:\(port)"
            try await waitUntilReady(base, http: http)
            let burst = try await post(Array(bodies.prefix(options.notifications)), to: base, http: http, rate: nil)
            let drainStarted = Date()
            if work == nil { work = try ChildProcess.spawn(executable, ["work"], environment: environment) }
            let appliedPerSecond = try await waitUntilApplied(options.notifications, since: options.sequential ? drainStarted : nil)
            let steady = try await post(Array(bodies.dropFirst(options.notifications)), to: base, http: http, rate: options.rate)
            _ = try await waitUntilApplied(options.notifications + steadyCount)
            let serveRSS = serve.peakResidentBytes ?? 0
            let workRSS = work?.peakResidentBytes ?? 0
            try? await http.shutdown()
            stop([serve] + (work.map { [$0] } ?? []))
            return report(burst: burst, steady: steady, appliedPerSecond: appliedPerSecond, serveRSS: serveRSS, workRSS: workRSS)
        } catch {
            try? await http.shutdown()
            stop([serve] + (work.map { [$0] } ?? []))
            throw error
        }
    }

    /// What one sending phase measured.
    struct Phase {
        var sent = 0
        var accepted = 0
        var failed = 0
        var seconds = 0.0
        var latencies: [Double] = []

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
    }

    /// POSTs every body with `options.clients` concurrent clients: as fast as answered, or paced at `rate` per second.
    func post(_ bodies: [ByteBuffer], to base: String, http: HTTPClient, rate: Int?) async throws -> Phase {
        guard !bodies.isEmpty else { return Phase() }
        final class Cursor: Sendable { let next = Atomic<Int>(0) }
        let cursor = Cursor()
        let clock = ContinuousClock()
        let began = clock.now
        let results = try await withThrowingTaskGroup(of: Phase.self) { group in
            for _ in 0..<options.clients {
                group.addTask {
                    var phase = Phase()
                    while true {
                        let index = cursor.next.add(1, ordering: .relaxed).oldValue
                        guard index < bodies.count else { return phase }
                        if let rate { try await Task.sleep(until: began + .microseconds(Int64(index) * 1_000_000 / Int64(rate)), clock: clock) }
                        var request = HTTPClientRequest(url: base + "/notifications/apple")
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(bodies[index])
                        let sent = clock.now
                        phase.sent += 1
                        do {
                            let response = try await http.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 16)
                            phase.latencies.append((clock.now - sent).seconds * 1000)
                            if response.status == .ok { phase.accepted += 1 } else { phase.failed += 1 }
                        } catch {
                            phase.failed += 1
                        }
                    }
                }
            }
            return try await group.reduce(into: Phase()) { total, phase in
                total.sent += phase.sent
                total.accepted += phase.accepted
                total.failed += phase.failed
                total.latencies += phase.latencies
            }
        }
        var phase = results
        phase.seconds = (clock.now - began).seconds
        return phase
    }

    func waitUntilReady(_ base: String, http: HTTPClient) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let response = try? await http.execute(HTTPClientRequest(url: base + "/readyz"), timeout: .seconds(2)),
                response.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CommandFailure("serve did not become ready within 60 s")
    }

    /// Waits until `count` notifications are applied; returns the applied rate from the database's own timestamps
    /// (first received — or `since`, when applying started later — to last applied).
    func waitUntilApplied(_ count: Int, since: Date? = nil) async throws -> Double {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let deadline = ContinuousClock.now + .seconds(600)
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    """
                    SELECT count(*) FILTER (WHERE applied_at IS NOT NULL)::bigint,
                        coalesce(extract(epoch FROM max(applied_at) - coalesce(\(since), min(received_at))), 0)::float8
                    FROM notifications
                    """, logger: logger)
                for try await (applied, seconds) in rows.decode((Int64, Double).self) where applied >= count {
                    return seconds > 0 ? Double(applied) / seconds : 0
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw CommandFailure("notifications were not all applied within 600 s")
        }
    }

    func stop(_ processes: [ChildProcess.Running]) {
        for process in processes { process.signal(SIGTERM) }
        for process in processes { _ = try? process.wait() }
    }

    func report(burst: Phase, steady: Phase, appliedPerSecond: Double, serveRSS: Int, workRSS: Int) -> BenchmarkReport {
        let intakePerSecond = Double(burst.accepted) / max(burst.seconds, 0.001)
        let megabytes = { (bytes: Int) in Double(bytes) / 1_048_576 }
        var report = BenchmarkReport()
        report.lines = [
            "e2e: \(burst.sent) notifications from \(options.clients) clients to serve + work, PostgreSQL beside them",
            "  intake:  \(Int(intakePerSecond)) notifications/s (\(burst.accepted) accepted, \(burst.failed) failed) in \(String(format: "%.2f", burst.seconds)) s; "
                + "latency p50 \(String(format: "%.2f", burst.percentile(0.5))) ms, p99 \(String(format: "%.2f", burst.percentile(0.99))) ms",
            "  applied: \(Int(appliedPerSecond)) notifications/s (\(options.sequential ? "work started after the burst" : "while the intake ran; first received to last applied"))",
            "  steady \(options.rate)/s for \(options.steadySeconds) s: \(steady.accepted) accepted, \(steady.failed) failed; "
                + "latency p50 \(String(format: "%.2f", steady.percentile(0.5))) ms, p99 \(String(format: "%.2f", steady.percentile(0.99))) ms",
            "  peak resident: serve \(String(format: "%.1f", megabytes(serveRSS))) MB + work \(String(format: "%.1f", megabytes(workRSS))) MB = \(String(format: "%.1f", megabytes(serveRSS + workRSS))) MB",
        ]
        report.fields = [
            ("benchmark", .text("e2e")), ("notifications", .integer(burst.sent)), ("clients", .integer(options.clients)),
            ("intakePerSecond", .integer(Int(intakePerSecond))), ("intakeP50Milliseconds", .number(burst.percentile(0.5))),
            ("intakeP99Milliseconds", .number(burst.percentile(0.99))), ("appliedPerSecond", .integer(Int(appliedPerSecond))),
            ("steadyRate", .integer(options.rate)), ("steadyP50Milliseconds", .number(steady.percentile(0.5))),
            ("steadyP99Milliseconds", .number(steady.percentile(0.99))), ("failed", .integer(burst.failed + steady.failed)),
            ("peakResidentMegabytes", .number(megabytes(serveRSS + workRSS))),
        ]
        return report
    }

    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw CommandFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
