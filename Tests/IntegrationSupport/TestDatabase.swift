import Crypto
import Foundation
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Testing

/// A fresh database per test on the throwaway cluster `scripts/test` starts (`STOREKEEPER_TEST_DATABASE_URL`).
enum TestDatabase {
    static let logger: Logger = {
        var logger = Logger(label: "storekeeper.tests")
        logger.logLevel = .warning
        return logger
    }()

    static func adminURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_DATABASE_URL"] else {
            throw TestSetupError("STOREKEEPER_TEST_DATABASE_URL is not set: run the tests with scripts/test")
        }
        return try DatabaseURL(parsing: text)
    }

    /// Creates an empty database (or a copy of database `template`), runs `body` with its URL, and drops it (unless
    /// `keeping`).
    static func withFreshDatabase<Result: Sendable>(
        copying template: String? = nil, keeping: Bool = false, _ body: (DatabaseURL) async throws -> Result
    ) async throws -> Result {
        let admin = try adminURL()
        let name = "sk_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        _ = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            if let template {
                try await client.query("CREATE DATABASE \(unescaped: name) TEMPLATE \(unescaped: template)", logger: logger)
            } else {
                try await client.query("CREATE DATABASE \(unescaped: name)", logger: logger)
            }
        }
        var url = admin
        url.database = name
        do {
            let result = try await body(url)
            if !keeping { try await drop(name, admin: admin) }
            return result
        } catch {
            try? await drop(name, admin: admin)
            throw error
        }
    }

    /// Creates a database with every migration applied — a copy of the template ``migratedTemplate`` holds, so each
    /// test does not run them all again — runs `body` with its URL, and drops it.
    static func withMigratedDatabase<Result: Sendable>(_ body: (DatabaseURL) async throws -> Result) async throws -> Result {
        let template = try await migratedTemplate.value
        return try await withFreshDatabase(copying: template, body)
    }

    /// Creates a migrated database (``withMigratedDatabase(_:)``), runs `body` with a running client on it (at most
    /// `maximumConnections` connections), and drops it.
    static func withMigratedClient<Result: Sendable>(
        maximumConnections: Int, _ body: @escaping @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await withMigratedDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: maximumConnections), logger: logger) { client in
                try await body(client)
            }
        }
    }

    /// The name of a database on the test cluster with every migration of `sql/` applied, made once per cluster and
    /// schema: named by the SQL files' digest, so a changed migration makes a new one. Built under a name of its own and
    /// renamed when complete, so a test process that finds it finds it whole (two processes racing keep the first).
    static let migratedTemplate = Task<String, any Error> {
        let directory = SchemaMigrator.defaultDirectory()
        var digest = SHA256()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).filter({ $0.hasSuffix(".sql") }).sorted() {
            digest.update(data: Data(name.utf8))
            digest.update(data: try Data(contentsOf: directory.appendingPathComponent(name)))
        }
        let name = "sk_template_" + digest.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
        let admin = try adminURL()
        let exists = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger).collect().count == 1
        }
        if exists { return name }
        try await withFreshDatabase(keeping: true) { url in
            try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
                _ = try await SchemaMigrator(client: client, directory: directory, logger: logger).migrate()
            }
            try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
                do {
                    try await client.query("ALTER DATABASE \(unescaped: url.database) RENAME TO \(unescaped: name)", logger: logger)
                } catch {
                    try await client.query("DROP DATABASE IF EXISTS \(unescaped: url.database) WITH (FORCE)", logger: logger)
                }
            }
        }
        return name
    }

    private static func drop(_ name: String, admin: DatabaseURL) async throws {
        _ = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
        }
    }

    /// Counts the advisory locks of the current database (a lock waited for is one `NOT granted`).
    static let advisoryLocksSQL = """
        SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """

    /// The one integer `sql` reads (-1 when it reads no row).
    static func count(_ client: PostgresClient, _ sql: String) async throws -> Int {
        for try await count in try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(Int.self) { return count }
        return -1
    }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes — never a fixed sleep.
func eventually(
    timeout: Duration = .seconds(15), _ message: String = "condition", _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("timed out after \(timeout) waiting for \(message)")
    throw TestSetupError("timed out waiting for \(message)")

}
