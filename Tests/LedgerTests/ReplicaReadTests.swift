import Foundation
import HummingbirdTesting
import Logging
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import Application
@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `STOREKEEPER_REPLICA_URL`: status reads that miss the cache go to a real streaming replica (a hot standby of a
/// private primary, made with `pg_basebackup -R`) only when it has replayed the account's last heard change. With
/// the replica's replay paused, it is provably behind (read directly), yet the status the API answers never is.
@Suite("Status reads from a read replica")
struct ReplicaReadTests {
    @Test("misses go to the replica when it has replayed the account's changes; paused or stopped, no status answered is stale")
    func replicaReads() async throws {
        try await Self.withPrimaryAndStandby { primary, standbyURL, standby in
            try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_REPLICA_URL": standbyURL.urlString], database: primary) {
                harness in
                let replica = try #require(harness.components.replica)
                try await harness.withHTTP { client in
                    func remaining(_ account: UUID) async throws -> Int64? {
                        try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self).credits["ai_requests"]?.remaining
                    }
                    func readsFromReplica() async throws -> Int {
                        let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                        let line = text.split(separator: "\n").first { $0.hasPrefix(#"storekeeper_status_reads_total{source="replica"}"#) }
                        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
                    }
                    func metric(_ name: String) async throws -> Double? {
                        let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                        return text.split(separator: "\n").first { $0.hasPrefix("\(name) ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
                    }
                    func usageRows(on database: PostgresClient) async throws -> Int {
                        try await TestDatabase.count(database, "SELECT count(*) FROM credit_ledger WHERE reason = 'usage'")
                    }
                    try await eventually("the account-change listener to be connected") { harness.components.statusCache.isListening }
                    try await eventually("the replica to be read as a standby") { try await metric("storekeeper_replica_up") == 1 }

                    // An account never read misses the cache; once the replica has replayed what was committed before
                    // the process began, it answers.
                    try await eventually("a miss answered by the replica") {
                        let before = try await readsFromReplica()
                        #expect(try await remaining(UUID()) == 5)
                        return try await readsFromReplica() > before
                    }

                    // The free tier's 5 a day: one spent, and the replica has replayed it.
                    let account = UUID()
                    #expect(try await client.spend(account, amount: 1).status == .ok)
                    try await eventually("the replica to replay the first spend") { try await usageRows(on: replica) == 1 }

                    try await replica.query("SELECT pg_wal_replay_pause()", logger: TestDatabase.logger)
                    try await eventually("the replica's replay to pause") {
                        try await TestDatabase.count(replica, "SELECT count(*) WHERE pg_get_wal_replay_pause_state() = 'paused'") == 1
                    }
                    // This process's own spend: the next read shows it, though the replica does not have it.
                    #expect(try await client.spend(account, amount: 2).status == .ok)
                    #expect(try await remaining(account) == 2, "this process's own spend shows in its next read")
                    #expect(try await usageRows(on: replica) == 1, "the replica is behind")
                    #expect(try await usageRows(on: harness.client) == 2)

                    // Another connection's commit (as another process's): once its NOTIFY is heard, reads show it.
                    try await harness.client.query(
                        """
                        INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                        SELECT 'test:replica:' || key, key, -1, 'usage' FROM credit_buckets
                        WHERE account_id = \(account.uuidString.lowercased()) AND meter = 'ai_requests'
                        """, logger: TestDatabase.logger)
                    try await eventually("the NOTIFY of another connection's commit to reach the status") { try await remaining(account) == 1 }

                    // Accounts the paused replica has every change of are still read there (a read that misses its
                    // deadline on a loaded machine goes to the primary, so: eventually).
                    try await eventually("an unchanged account read on the paused replica") {
                        let before = try await readsFromReplica()
                        #expect(try await remaining(UUID()) == 5)
                        return try await readsFromReplica() > before
                    }

                    try await replica.query("SELECT pg_wal_replay_resume()", logger: TestDatabase.logger)
                    try await eventually("the replica to catch up") { try await usageRows(on: replica) == 3 }
                    #expect(try await remaining(account) == 1)

                    // A standby that crashes and starts again replays from its last restart point: until it is back
                    // where the changes need it, reads go to the primary; then to it again.
                    standby.stop(immediately: true)
                    _ = try standby.start(port: standbyURL.port)
                    #expect(try await remaining(account) == 1)
                    try await eventually("reads on the restarted replica") {
                        let before = try await readsFromReplica()
                        #expect(try await remaining(UUID()) == 5)
                        return try await readsFromReplica() > before
                    }

                    // A replica that stops: every read is answered, from the primary, and none is stale.
                    standby.stop(immediately: true)
                    try await eventually("the stopped replica to be noticed") { try await metric("storekeeper_replica_up") == 0 }
                    #expect(try await client.spend(account, amount: 1).status == .ok)
                    for _ in 0..<3 { #expect(try await remaining(UUID()) == 5) }
                    #expect(try await remaining(account) == 0)
                }
            }
        }
    }

    @Test("a serve whose pool cannot fit the replica's max_connections says so at start, naming the replica, and keeps running")
    func replicaConnectionBudget() async throws {
        try await Self.withPrimaryAndStandby { primary, standbyURL, _ in
            try await StorekeeperHarness.run(worker: false, database: primary) { harness in
                var environment = harness.processEnvironment
                let port = try PrivateCluster.freePort()
                environment["STOREKEEPER_PORT"] = String(port)
                environment["STOREKEEPER_REPLICA_URL"] = standbyURL.urlString
                // A pool of 1,028 against the private clusters' max_connections of 200: both checks fail.
                environment["STOREKEEPER_WORKER_CONCURRENCY"] = "1024"
                let serve = try TestProcess("storekeeper", arguments: ["serve"], environment: environment)
                defer { serve.signal(SIGTERM) }
                let replicaError =
                    "this process may open 1028 database connections to the read replica (STOREKEEPER_REPLICA_URL) but the server allows"
                try await eventually(timeout: .seconds(60), "the replica's connection budget error") { serve.text.contains(replicaError) }
                try await eventually(timeout: .seconds(60), "the primary's") {
                    serve.text.contains("this process may open 1028 database connections but the server allows")
                }
                try await eventually(timeout: .seconds(60), "serve to answer /healthz") {
                    let answer = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/healthz")!)
                    return (answer?.1 as? HTTPURLResponse)?.statusCode == 200
                }
                serve.signal(SIGTERM)
                #expect(await serve.waitForExit(timeout: .seconds(45)) == 0, "\(serve.text)")
            }
        }
    }

    /// helper-152: the tracker's warning said only `not answered within 1.0 seconds` whether the replica was down,
    /// refused the login (after `serve`'s start, where no check looks any more) or was stalled.
    @Test(
        "a replica whose position cannot be read is named with the cause a login of its own finds: here the login refused, with the server's reason"
    )
    func trackerNamesTheCause() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 2) { primary in
            var replicaURL = try TestDatabase.adminURL()
            replicaURL.database = "storekeeper_absent_\(UInt32.random(in: 0...UInt32.max))"
            let replica = PostgresClient(configuration: replicaURL.clientConfiguration(maximumConnections: 1), backgroundLogger: TestDatabase.logger)
            let records = LogRecords()
            let tracker = ReplicaPositionTracker(
                primary: primary, replica: replica, replicaURL: replicaURL, cache: AccountStatusCache(replica: true),
                logger: Logger(label: "tracker") { _ in RecordingLogHandler(records: records) })
            let running = Task {
                await withDiscardingTaskGroup { group in
                    group.addTask { await replica.run() }
                    group.addTask { try? await tracker.run() }
                }
            }
            defer { running.cancel() }
            let expected =
                "cannot read the read replica's replay position (the replica refuses the login of STOREKEEPER_REPLICA_URL: database \"\(replicaURL.database)\" does not exist); status reads go to the primary"
            try await eventually(timeout: .seconds(30), "the tracker's warning with its cause") { records.messages(at: .warning) == [expected] }
        }
    }

    /// A private primary and a hot standby streaming from it, both stopped and removed afterwards.
    static func withPrimaryAndStandby(_ body: (DatabaseURL, DatabaseURL, PrivateCluster) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-replica-\(UUID().uuidString.prefix(8))")
        let primary = try PrivateCluster(directory: directory.appendingPathComponent("primary"))
        let standby = try PrivateCluster(directory: directory.appendingPathComponent("standby"))
        defer {
            standby.stop(immediately: true)
            primary.stop(immediately: true)
            try? FileManager.default.removeItem(at: directory)
        }
        let primaryURL = try primary.start()
        try await body(primaryURL, try standby.startStandby(of: primaryURL), standby)
    }
}
