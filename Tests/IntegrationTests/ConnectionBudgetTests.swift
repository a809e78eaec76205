import StorekeeperRuntime
import Testing
import TestSupport

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
}
