import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Jobs
import LocalSigning
import Logging
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import Testing

/// A Storekeeper on a fresh database with a local Apple-shaped chain: the real components, the real router, and
/// optionally a real worker, for tests that go through HTTP.
struct StorekeeperHarness {
    static let bundleId = "com.example.app"
    static let apiKey = "test-api-key"
    /// `STOREKEEPER_ERASURE_KEY` unless a test sets its own (or none, to see erasure refused).
    static let erasureKey = "test-erasure-key-0123456789abcdef-0123456789"

    let components: StorekeeperComponents
    let chain: LocalSigningChain
    let signer: NotificationSigner
    let databaseURL: DatabaseURL
    /// The environment the harness was configured from: child `storekeeper` processes get the same.
    let processEnvironment: [String: String]

    var client: PostgresClient { components.client }

    /// Runs `body` with a migrated database, the client running and — when `worker` is true — a job worker; with
    /// `STOREKEEPER_REPLICA_URL` in `environment`, the replica's pool and position tracker too, as `serve` runs them.
    /// - Parameter database: a database of the test's own (a private cluster); default: a fresh one of the tests'.
    static func run(
        worker: Bool = true, environment extra: [String: String] = [:], rootPaths: [String] = [],
        chainOptions: LocalSigningChain.Options = .init(),
        clock: @escaping @Sendable () -> Date = { Date() },
        database: DatabaseURL? = nil,
        _ body: (StorekeeperHarness) async throws -> Void
    ) async throws {
        if let database {
            return try await run(
                on: database, worker: worker, environment: extra, rootPaths: rootPaths, chainOptions: chainOptions, clock: clock, body)
        }
        try await TestDatabase.withMigratedDatabase { url in
            try await run(on: url, worker: worker, environment: extra, rootPaths: rootPaths, chainOptions: chainOptions, clock: clock, body)
        }
    }

    private static func run(
        on url: DatabaseURL, worker: Bool, environment extra: [String: String], rootPaths: [String], chainOptions: LocalSigningChain.Options,
        clock: @escaping @Sendable () -> Date, _ body: (StorekeeperHarness) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try LocalSigningChain.generate(chainOptions)
        try chain.save(to: directory)
        var environment = [
            "DATABASE_URL": url.urlString,
            "STOREKEEPER_BUNDLE_ID": bundleId,
            "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": ([directory.appendingPathComponent("root.pem").path] + rootPaths).joined(separator: ","),
            "STOREKEEPER_API_KEYS": apiKey,
            "STOREKEEPER_ERASURE_KEY": erasureKey,
        ]
        environment.merge(extra) { _, new in new }
        let configuration = try StorekeeperConfiguration.load(environment: environment)
        // As `serve` builds them: the database connections and group commits on their own event loop.
        let components = try StorekeeperComponents(
            configuration: configuration, databaseThread: true, clock: clock, logger: TestDatabase.logger)
        let harness = StorekeeperHarness(
            components: components, chain: chain,
            signer: NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: configuration.bundleId), databaseURL: url,
            processEnvironment: environment)
        let pool = await components.client.startRunning()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.value }
            defer { pool.cancel() }
            try await components.migrator.migrate()
            group.addTask { try await components.accountChangeListener().run() }
            if let replica = components.replica, let tracker = components.replicaPositionTracker() {
                let replicaPool = await replica.startRunning()
                group.addTask {
                    await withTaskCancellationHandler {
                        await replicaPool.value
                    } onCancel: {
                        replicaPool.cancel()
                    }
                }
                group.addTask { try await tracker.run() }
            }
            if worker {
                let jobWorker = components.worker(options: .init(concurrency: 4, pollInterval: .milliseconds(200)))
                group.addTask { try await jobWorker.run() }
            }
            defer { group.cancelAll() }
            try await body(harness)
            try await harness.expectBalancesKept()
        }
    }

    /// Runs `body` against the real router without a socket.
    func withHTTP(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let application = Application(router: components.router())
        try await application.test(.router) { client in try await body(client) }
    }

    func subscription(account: UUID?, originalTransactionId: String = String(Int.random(in: 2_000_000_000...2_999_999_999)))
        -> SimulatedEvent.Subscription
    {
        SimulatedEvent.Subscription(
            originalTransactionId: originalTransactionId, productId: "pro.monthly", accountId: account,
            bundleId: Self.bundleId)
    }

    /// Waits until one connection of the test's database has finished its LISTEN: idle after it, so the LISTEN has
    /// committed and a NOTIFY sent from now on reaches it (while the LISTEN still runs, one would be missed).
    func waitUntilListening() async throws {
        try await eventually(timeout: .seconds(10), "a connection to listen") {
            try await count(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %storekeeper_jobs%' AND state = 'idle'"
            ) == 1
        }
    }

    /// Every bucket's kept balance (sql/0041) is the sum of its ledger rows, and every ledger row names a bucket that
    /// exists (sql/0055 keeps that without a foreign key), whatever the test did: checked after each test, in one
    /// snapshot (the ledger's triggers keep both in the writer's transaction).
    func expectBalancesKept() async throws {
        let wrong = try await balanceMismatches()
        #expect(wrong == 0, "\(wrong) buckets whose kept balance is not the sum of their ledger rows")
        let orphans = try await count(Self.orphanedLedgerRows)
        #expect(orphans == 0, "\(orphans) ledger rows name a bucket that does not exist")
    }

    /// How many ledger rows name a bucket that does not exist (sql/0055 refuses them).
    static let orphanedLedgerRows =
        "SELECT count(*) FROM credit_ledger l WHERE NOT EXISTS (SELECT 1 FROM credit_buckets k WHERE k.key = l.bucket)"

    /// How many buckets have a kept balance other than the sum of their ledger rows.
    func balanceMismatches() async throws -> Int {
        try await count(
            """
            SELECT count(*) FROM credit_buckets k LEFT JOIN credit_bucket_balances s ON s.bucket = k.key
            WHERE coalesce(s.balance, 0) <> coalesce((SELECT sum(l.delta) FROM credit_ledger l WHERE l.bucket = k.key), 0)
            """)
    }

    /// Enqueues a job of `kind` with no arguments, as a periodic schedule does, under `uniqueKey`, and waits for the
    /// worker to complete it.
    func runJob(_ kind: String, uniqueKey: String, timeout: Duration = .seconds(30)) async throws {
        _ = try await count(
            "WITH queued AS (INSERT INTO jobs (kind, args, unique_key) VALUES ('\(kind)', '{}', '\(uniqueKey)') RETURNING 1) SELECT count(*) FROM queued"
        )
        try await eventually(timeout: timeout, "the \(kind) job \(uniqueKey)") {
            try await count("SELECT count(*) FROM job_history WHERE kind = '\(kind)' AND unique_key = '\(uniqueKey)' AND state = 'completed'") == 1
        }
    }

    /// Every stored event of `account`, by sequence.
    func storedEvents(of account: String) async throws -> [(id: String, type: String)] {
        var events: [(id: String, type: String)] = []
        for try await (id, type) in try await client.query(
            "SELECT id::text, type FROM events WHERE account_id = \(account) ORDER BY sequence", logger: TestDatabase.logger
        ).decode((String, String).self) { events.append((id, type)) }
        return events
    }

    func count(_ sql: String) async throws -> Int {
        let rows = try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

extension TestClientProtocol {
    /// POSTs a body to the Apple intake.
    func postNotification(_ body: Data) async throws -> TestResponse {
        try await execute(
            uri: "/notifications/apple", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(data: body))
    }

    /// GETs a service API path with the test key.
    func getWithKey(_ uri: String) async throws -> TestResponse {
        try await execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
    }
}

extension TestResponse {
    /// The JSON body as a dictionary.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]) ?? [:]
    }
}

extension StorekeeperHarness {
    /// Waits until `count` stored notifications have been applied (any outcome).
    func waitApplied(_ count: Int) async throws {
        try await eventually("\(count) notifications applied") {
            try await self.count("SELECT count(*) FROM notifications WHERE apply_outcome IS NOT NULL") == count
        }
    }
}

extension StorekeeperHarness {
    /// `STOREKEEPER_OFFERS` of the tests that sign offers: a win-back offer for lapsed customers and one for active ones.
    static let offers =
        #"{"offers": [{"id": "winback", "product": "pro.monthly", "audience": "lapsed"}, {"id": "stay", "product": "pro.monthly", "audience": "active", "once_per_account": false}]}"#
}
