import Logging
import Persistence
import PostgresNIO
import ServiceLifecycle
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

@Suite("Connections per process: bounded on big machines, compared with max_connections")
struct ConnectionBudgetTests {
    @Test("sixteen jobs a core, 32 at least and 64 at most: a 64-core work keeps at most 68 connections, not 1,028")
    func defaultsAreBounded() throws {
        #expect([1, 2, 4, 16, 64].map { StorekeeperConfiguration.defaultWorkerConcurrency(cores: $0) } == [32, 32, 64, 64, 64])
        var environment = [
            "DATABASE_URL": "postgres://u@127.0.0.1:1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.repository.appendingPathComponent("config/AppleRootCA-G3.cer").path,
        ]
        let configuration = try StorekeeperConfiguration.load(environment: environment)
        #expect(configuration.databaseConnections <= 68)
        #expect(configuration.databaseConnections == max(20, configuration.workerConcurrency + 4))
        environment["STOREKEEPER_WORKER_CONCURRENCY"] = "8"
        #expect(try StorekeeperConfiguration.load(environment: environment).databaseConnections == 20)
    }

    @Test("fits, crowded by the connections open now, or beyond what the server lets an ordinary role open")
    func verdicts() {
        // max_connections 100 with 3 reserved: 97 for ordinary roles.
        #expect(ConnectionBudget(maxConnections: 100, reserved: 3, open: 10, pool: 68).verdict == .fits)
        #expect(ConnectionBudget(maxConnections: 100, reserved: 3, open: 29, pool: 68).verdict == .fits)
        #expect(ConnectionBudget(maxConnections: 100, reserved: 3, open: 30, pool: 68).verdict == .crowded(free: 67))
        #expect(ConnectionBudget(maxConnections: 100, reserved: 3, open: 0, pool: 97).verdict == .fits)
        #expect(ConnectionBudget(maxConnections: 100, reserved: 3, open: 0, pool: 98).verdict == .exceeds(allowed: 97))
    }

    /// `ServiceGroup` fails the whole group when a service returns while it is shutting down another one: a `work`
    /// told to stop just as its start check finished exited 1 (CI caught it under load).
    @Test("the start check lives until the group stops it: a check ending while another service stops does not fail the process")
    func checkOutlivesAnotherServicesShutdown() async throws {
        let logger = TestDatabase.logger
        try await PostgresClient.withRunning(TestDatabase.adminURL().clientConfiguration(maximumConnections: 2), logger: logger) { client in
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [ConnectionBudgetCheck(client: client, pool: 4, logger: logger), SlowToStop()], logger: logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                await group.triggerGracefulShutdown()
                // Throws `serviceFinishedUnexpectedly` when the check ends during `SlowToStop`'s second.
                try await tasks.next()
            }
        }
    }
}

/// A service that takes a second to stop, as a worker finishing its jobs in flight does; the group stops it first.
private struct SlowToStop: Service {
    func run() async throws {
        try? await gracefulShutdown()
        try await Task.sleep(for: .seconds(1))
    }
}
