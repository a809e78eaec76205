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

    /// Creates an empty database, runs `body` with its URL, and drops it.
    static func withFreshDatabase<Result: Sendable>(_ body: (DatabaseURL) async throws -> Result) async throws -> Result {
        let admin = try adminURL()
        let name = "sk_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        _ = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query("CREATE DATABASE \(unescaped: name)", logger: logger)
        }
        var url = admin
        url.database = name
        do {
            let result = try await body(url)
            try await drop(name, admin: admin)
            return result
        } catch {
            try? await drop(name, admin: admin)
            throw error
        }
    }

    /// Creates an empty database, applies every migration, runs `body` with a running client on it (at most
    /// `maximumConnections` connections), and drops it.
    static func withMigratedClient<Result: Sendable>(
        maximumConnections: Int, _ body: @escaping @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: maximumConnections), logger: logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: logger).migrate()
                return try await body(client)
            }
        }
    }

    private static func drop(_ name: String, admin: DatabaseURL) async throws {
        _ = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
        }
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
