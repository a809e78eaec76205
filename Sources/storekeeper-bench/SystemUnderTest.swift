import AppStoreModels
import AsyncHTTPClient
import Foundation
import HTTPAPI
import LocalSigning
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import StorekeeperRuntime

/// `storekeeper serve` and `work` as processes on a given database, with a local Apple-shaped signing chain they
/// trust — what the end-to-end benchmark and the drills drive over HTTP.
final class SystemUnderTest: @unchecked Sendable {
    let databaseURL: DatabaseURL
    private(set) var environment: [String: String]
    let base: String
    let port: Int
    /// The chain `serve` and `work` trust.
    let chain: LocalSigningChain
    let signer: NotificationSigner
    let http: HTTPClient
    let logger: Logger
    /// The `storekeeper` it drives: `STOREKEEPER_EXECUTABLE`, else the one built beside `storekeeper-bench` — found
    /// from `/proc/self/exe`, not `argv[0]`, which names no folder when the benchmark is run from `PATH`.
    private(set) var executable = SystemUnderTest.defaultExecutable
    static var defaultExecutable: String {
        ProcessInfo.processInfo.environment["STOREKEEPER_EXECUTABLE"]
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("storekeeper").path
    }
    private let directory: URL
    /// Kills the processes if the benchmark is interrupted (``Interruption``).
    private var interrupted: UUID?
    private(set) var serve: ChildProcess.Running?
    /// Further `serve` processes on the same database (``startAdditionalServe()``), as an operator scales out.
    private(set) var additionalServes: [(port: Int, process: ChildProcess.Running)] = []
    /// Every `serve`'s port: the load generator spreads its connections over them.
    var ports: [Int] { [port] + additionalServes.map(\.port) }
    private(set) var workers: [ChildProcess.Running] = []
    static let bundleId = "com.example.bench"
    /// The tier catalogue `serve` and `work` run with: the products the benchmark and drills sell.
    static let tiers = """
        meters:
          - { id: ai_requests, display_name: AI requests }
          - { id: exports, display_name: Exports }
        free:
          display_name: Free
          allowances:
            ai_requests: { per_day: 5 }
            exports: { per_cycle: 3 }
        tiers:
          - id: pro
            level: 2
            display_name: Pro
            products:
              - { id: pro.monthly, period: P1M, price: 9990, currency: USD }
              - { id: price_pro_monthly, store: stripe, period: P1M, price: 9990, currency: USD }
            allowances:
              ai_requests: { per_cycle: 1000, trial_cap: 100 }
              exports: { unlimited: true }
          - id: max
            level: 1
            display_name: Max
            products:
              - { id: max.monthly, period: P1M, price: 19990, currency: USD }
            allowances:
              ai_requests: { per_cycle: 3000 }
              exports: { unlimited: true }
        top_ups:
          - { id: credits.100, meter: ai_requests, credits: 100, price: 1990, currency: USD }
        """

    /// - Parameters:
    ///   - environment: added to (or replacing) the processes' configuration.
    ///   - executable: the `storekeeper` to run instead of the default (a previous release's, for the upgrade drill).
    ///   - chain: the signing chain to trust, when another system's notifications must verify here too (the restore drill).
    init(
        databaseURL: DatabaseURL, clients: Int, environment extra: [String: String] = [:], executable: String? = nil,
        chain: LocalSigningChain? = nil, logger: Logger
    ) throws {
        self.databaseURL = databaseURL
        self.logger = logger
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-sut-\(UUID().uuidString)")
        let chain = try chain ?? LocalSigningChain.generate()
        try chain.save(to: directory)
        let tiers = directory.appendingPathComponent("tiers.yml")
        try Data(Self.tiers.utf8).write(to: tiers)
        let port = try PrivateCluster.freePort()
        base = "http://127.0.0.1:\(port)"
        environment = [
            "DATABASE_URL": databaseURL.urlString, "STOREKEEPER_BUNDLE_ID": Self.bundleId, "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": directory.appendingPathComponent("root.pem").path,
            "STOREKEEPER_TIERS": tiers.path, "STOREKEEPER_API_KEYS": "bench", "STOREKEEPER_PORT": String(port), "STOREKEEPER_LOG_FORMAT": "json",
        ].merging(extra) { $1 }
        self.port = port
        self.chain = chain
        if let executable { self.executable = executable }
        signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: Self.bundleId)
        var configuration = HTTPClient.Configuration()
        // A kept-alive connection is dropped here at half `serve`'s idle deadline, before `serve` closes it: a request
        // sent on a connection at the instant the server closes it gets no answer at all.
        let serverIdle =
            Int(environment["STOREKEEPER_HTTP_IDLE_TIMEOUT"] ?? ProcessInfo.processInfo.environment["STOREKEEPER_HTTP_IDLE_TIMEOUT"] ?? "").map(
                Duration.seconds) ?? HTTPServerLimits().idleTimeout
        configuration.connectionPool = .init(idleTimeout: TimeAmount(serverIdle / 2), concurrentHTTP1ConnectionsPerHostSoftLimit: clients)
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        interrupted = Interruption.register { [weak self] in
            guard let self else { return }
            for process in [self.serve].compactMap({ $0 }) + self.additionalServes.map(\.process) + self.workers { process.signal(SIGKILL) }
        }
    }

    func migrate() throws {
        let result = try ChildProcess.run(executable, ["migrate"], environment: environment)
        guard result.status == 0 else { throw CommandFailure("migrate failed: \(result.output)") }
    }

    func startServe() async throws {
        let serve = try ChildProcess.spawn(executable, ["serve"], environment: environment)
        self.serve = serve
        do {
            try await waitUntilReady(serve, port: port)
        } catch {
            self.serve = nil
            throw error
        }
    }

    /// One more `serve` on its own port, sharing the database (and, through its NOTIFYs, the status cache's truth).
    func startAdditionalServe() async throws {
        let port = try PrivateCluster.freePort()
        var environment = environment
        environment["STOREKEEPER_PORT"] = String(port)
        let serve = try ChildProcess.spawn(executable, ["serve"], environment: environment)
        additionalServes.append((port, serve))
        try await waitUntilReady(serve, port: port)
    }

    private func waitUntilReady(_ serve: ChildProcess.Running, port: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if serve.hasExited {
                let result = try serve.wait()
                let reason = result.output.split(separator: "\n").last.map(String.init) ?? "no output"
                throw CommandFailure("serve exited with status \(result.status): \(reason)")
            }
            if let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"), timeout: .seconds(2)),
                response.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CommandFailure("serve did not become ready within 60 s")
    }

    @discardableResult
    func startWorker() throws -> ChildProcess.Running {
        let worker = try ChildProcess.spawn(executable, ["work"], environment: environment)
        workers.append(worker)
        return worker
    }

    /// Kills a worker with `signal` and forgets it.
    func kill(_ worker: ChildProcess.Running, signal: Int32) {
        worker.signal(signal)
        _ = try? worker.wait()
        workers.removeAll { $0.pid == worker.pid }
    }

    /// The `subscribe` notification of a fresh subscription, signed.
    func subscribe(_ index: Int, account: UUID = UUID(), at date: Date) throws -> (uuid: UUID, body: ByteBuffer) {
        let subscription = SimulatedEvent.Subscription(
            originalTransactionId: String(3_000_000_000_000 + index), productId: "pro.monthly", accountId: account, bundleId: Self.bundleId)
        let uuid = UUID()
        let event = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: date)
        return (uuid, ByteBuffer(data: try signer.requestBody(for: event, notificationUUID: uuid)))
    }

    /// POSTs one body to the intake: the status (nil when no answer came) and the `status` field of the answer.
    func post(_ body: ByteBuffer, timeout: Int64 = 30) async -> (status: UInt?, answer: String?) {
        var request = HTTPClientRequest(url: base + "/notifications/apple")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        guard let response = try? await http.execute(request, timeout: .seconds(timeout)) else { return (nil, nil) }
        let bytes = (try? await response.body.collect(upTo: 1 << 16)) ?? ByteBuffer()
        let object = try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]
        return (response.status.code, object?["status"] as? String)
    }

    /// One request of any kind: the status (nil when no answer came), the response's headers and its body (the client's
    /// error when no answer came).
    func request(
        _ path: String, method: HTTPMethod = .GET, headers: [(String, String)] = [], body: ByteBuffer? = nil, timeout: Int64 = 10
    ) async -> (status: UInt?, headers: HTTPHeaders, body: String) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        do {
            let response = try await http.execute(request, timeout: .seconds(timeout))
            let bytes = (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer()
            return (response.status.code, response.headers, String(buffer: bytes))
        } catch {
            return (nil, [:], "\(error)")
        }
    }

    /// One integer from the database.
    func count(_ sql: String) async throws -> Int {
        Int(try await text("SELECT (\(sql))::text")) ?? 0
    }

    /// One text value from the database.
    func text(_ sql: String) async throws -> String {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let rows = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            for try await value in rows.decode(String?.self) { return value ?? "" }
            return ""
        }
    }

    /// Polls until `condition` holds, at most `seconds`.
    func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    /// Peak resident memory of the serves and the workers now running (summed over the processes of each kind).
    var peakResidentBytes: (serve: Int, work: Int) {
        (
            ([serve].compactMap { $0 } + additionalServes.map(\.process)).reduce(0) { $0 + ($1.peakResidentBytes ?? 0) },
            workers.reduce(0) { $0 + ($1.peakResidentBytes ?? 0) }
        )
    }

    /// Stops every process gracefully (SIGTERM) and says so when one did not stop cleanly: a status other than 0, more
    /// than 10 s to exit, or a warning that its database pool did not close.
    func stop() async {
        if let interrupted { Interruption.done(interrupted) }
        try? await http.shutdown()
        stopProcesses()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body`, then stops everything (``stop()``) whether it threw or not.
    func stopping<Result>(after body: () async throws -> Result) async throws -> Result {
        do {
            let result = try await body()
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }

    /// Stops every `serve` and `work` gracefully (SIGTERM), keeping the configuration for processes started later —
    /// of another release (``switchRelease(executable:sqlDirectory:)``).
    func stopProcesses() {
        let processes = [serve].compactMap { $0 } + additionalServes.map(\.process) + workers
        let signalled = ContinuousClock.now
        for process in processes { process.signal(SIGTERM) }
        for process in processes {
            guard let result = try? process.wait() else { continue }
            let seconds = (ContinuousClock.now - signalled).seconds
            let poolStuck = result.output.contains("database pool did not close")
            if result.status != 0 || seconds > 10 || poolStuck {
                say(
                    "  note: \(process.arguments.joined(separator: " ")) (pid \(process.pid)) stopped with status \(result.status) after "
                        + String(format: "%.1f s", seconds) + (poolStuck ? "; its database pool did not close" : ""))
            }
        }
        serve = nil
        additionalServes = []
        workers = []
    }

    /// Runs the processes started from now on (and `migrate`) from another release: its executable and its `sql/`.
    func switchRelease(executable: String, sqlDirectory: String) {
        self.executable = executable
        environment["STOREKEEPER_SQL_DIR"] = sqlDirectory
    }
}
