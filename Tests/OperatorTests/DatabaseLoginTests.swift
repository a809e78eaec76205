import Foundation
import Logging
import PostgresNIO
import Testing

@testable import IntegrationSupport
@testable import StorekeeperRuntime

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an operator sees when `DATABASE_URL` is wrong, judged from outside the processes: a login the server refuses
/// for good (a role it does not know, a database that does not exist) ends `serve` and `work` with one line saying
/// the server's reason, exit 1; a server not reached yet is waited for, the process up and saying so on `/readyz`.
@Suite("DATABASE_URL's login at start")
struct DatabaseLoginTests {
    @Test(
        "serve with a database that does not exist and work with a role the server does not know end, after the refusal lasted 10 s, with exit 1 and one line giving the server's reason and not the password; a serve whose server is not reached yet runs on, says so, answers /readyz 503, and stops cleanly"
    )
    func refusedLoginEndsTheProcess() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let base = try Self.databaseURL(of: harness)
            var absentDatabase = Self.absentDatabase(of: base)
            // The test cluster trusts local logins and never asks for it: it is here to be looked for in the output.
            absentDatabase.password = "hunter2-never-echoed"
            var serving = harness.processEnvironment
            serving["DATABASE_URL"] = absentDatabase.urlString
            serving["STOREKEEPER_PORT"] = String(try PrivateCluster.freePort())
            // Short bearer keys are named at start by their variable and position, never by their value.
            serving["STOREKEEPER_API_KEYS"] = "short-service-key,\(String(repeating: "a1", count: 16))"
            serving["STOREKEEPER_METRICS_KEYS"] = "metrics-short"
            var absentRole = base
            absentRole.username = "storekeeper_absent_role"
            var working = harness.processEnvironment
            working["DATABASE_URL"] = absentRole.urlString
            // Each refusal must last the check's window (10 s) before the process ends: the two run side by side.
            async let served = TestProcess.run("storekeeper", ["serve"], environment: serving)
            async let worked = TestProcess.run("storekeeper", ["work"], environment: working)
            let (serve, serveOutput) = try await served
            #expect(serve == 1, "\(serveOutput)")
            let serveLines = serveOutput.split(separator: "\n").filter { $0.hasPrefix("storekeeper: ") }
            #expect(serveLines.count == 1, "\(serveOutput)")
            #expect(
                serveLines.first?.contains(
                    "storekeeper: the database refused the login of DATABASE_URL (\(absentDatabase)): database \"\(absentDatabase.database)\" does not exist"
                )
                    == true, "\(serveOutput)")
            #expect(!serveOutput.contains("hunter2-never-echoed"), "no password is echoed: \(serveOutput)")
            let shortKeys = serveOutput.split(separator: "\n").filter { $0.contains("short bearer key") }
            #expect(shortKeys.count == 2, "\(serveOutput)")
            #expect(shortKeys.first?.contains("STOREKEEPER_API_KEYS") == true && shortKeys.first?.contains("1 of 2") == true, "\(shortKeys)")
            #expect(shortKeys.last?.contains("STOREKEEPER_METRICS_KEYS") == true, "\(shortKeys)")
            #expect(!serveOutput.contains("short-service-key") && !serveOutput.contains("metrics-short"), "no key is echoed: \(serveOutput)")
            let (work, workOutput) = try await worked
            #expect(work == 1, "\(workOutput)")
            #expect(workOutput.contains("role \"storekeeper_absent_role\" does not exist"), "\(workOutput)")

            // Nothing listens on this port: the server may come later, and the process waits for it.
            var unreached = base
            unreached.host = "127.0.0.1"
            unreached.port = try PrivateCluster.freePort()
            let (early, port) = try Self.serve(harness, setting: "DATABASE_URL", to: unreached)
            defer { early.signal(SIGKILL) }
            try await eventually(timeout: .seconds(60), "serve to answer /readyz 503") {
                (try? await ErasureKeyTests.request(port: port, "GET", "/readyz"))?.0 == 503
            }
            #expect(early.isRunning)
            try await eventually(timeout: .seconds(30), "serve to say it waits for the database") {
                early.text.contains("the database is not reached yet; waiting for it")
            }
            early.signal(SIGTERM)
            #expect(await early.waitForExit(timeout: .seconds(30)) == 0, "\(early.text)")
        }
    }

    /// The harness's `DATABASE_URL`.
    static func databaseURL(of harness: StorekeeperHarness) throws -> DatabaseURL {
        try DatabaseURL(parsing: try #require(harness.processEnvironment["DATABASE_URL"]))
    }

    /// `url` naming a database its server does not have.
    static func absentDatabase(of url: DatabaseURL) -> DatabaseURL {
        var absent = url
        absent.database = "storekeeper_absent_\(UInt32.random(in: 0...UInt32.max))"
        return absent
    }

    /// A `serve` process with the harness's settings but `variable` set to `url`, on a free port.
    static func serve(_ harness: StorekeeperHarness, setting variable: String, to url: DatabaseURL) throws -> (TestProcess, Int) {
        var environment = harness.processEnvironment
        environment[variable] = url.urlString
        let port = try PrivateCluster.freePort()
        environment["STOREKEEPER_PORT"] = String(port)
        return (try TestProcess("storekeeper", arguments: ["serve"], environment: environment), port)
    }

    /// A replica URL with a login the server refuses (here a database that does not exist) is reported, not fatal:
    /// before, `serve` said nothing but a deadline in its position tracker's line; ending the process instead would
    /// end it after `/readyz` had said ready (a rollout replacing every `serve` with one that exits: helper-151).
    @Test(
        "serve whose STOREKEEPER_REPLICA_URL's login is refused for good logs one error naming the variable and the server's reason, stays ready on the primary, and stops cleanly"
    )
    func refusedReplicaLoginIsReported() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let absentReplica = Self.absentDatabase(of: try Self.databaseURL(of: harness))
            let (serve, port) = try Self.serve(harness, setting: "STOREKEEPER_REPLICA_URL", to: absentReplica)
            defer { serve.signal(SIGKILL) }
            // The log line is JSON: the server's quotes around the name come escaped.
            let reported = [
                "the database refused the login of STOREKEEPER_REPLICA_URL (\(absentReplica)): database ",
                "\(absentReplica.database)", " does not exist; status reads stay on DATABASE_URL until it is fixed",
            ]
            // The refusal counts once it has lasted 10 s.
            try await eventually(timeout: .seconds(40), "serve to report the replica's refusal") {
                serve.text.split(separator: "\n").contains { line in reported.allSatisfy { line.contains($0) } }
            }
            #expect(serve.isRunning, "\(serve.text)")
            #expect((try? await ErasureKeyTests.request(port: port, "GET", "/readyz"))?.0 == 200, "\(serve.text)")
            #expect(serve.text.components(separatedBy: "the database refused the login").count == 2, "reported once: \(serve.text)")
            serve.signal(SIGTERM)
            #expect(await serve.waitForExit(timeout: .seconds(30)) == 0, "\(serve.text)")
        }
    }

    /// A refusal reported, then fixed in part: the operator creates the role the URL names, and the database it names
    /// is still missing. Before, the first reason stayed the only one said until the login was accepted.
    @Test(
        "a reported refusal whose reason changes (the role created, its database not yet) is reported again with the new reason; once accepted, that is said"
    )
    func changedRefusalIsReportedAgain() async throws {
        let admin = try TestDatabase.adminURL()
        let suffix = UInt32.random(in: 0...UInt32.max)
        let url = DatabaseURL(
            host: admin.host, port: admin.port, username: "storekeeper_login_\(suffix)", password: nil, database: "storekeeper_login_\(suffix)",
            tlsMode: admin.tlsMode)
        let records = LogRecords()
        let logger = Logger(label: "login") { _ in RecordingLogHandler(records: records) }
        let timing = DatabaseLoginCheck.Timing(
            refusalWindow: .milliseconds(200), retryInterval: .milliseconds(100), reportedRetryInterval: .milliseconds(300))
        let check = DatabaseLoginCheck(
            url: url, variable: "STOREKEEPER_REPLICA_URL", onRefusal: .report(meanwhile: "status reads stay on DATABASE_URL"), timing: timing,
            logger: logger)
        let running = Task { try await check.run() }
        defer { running.cancel() }
        try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) { client in
            // The test cluster is thrown away after the run: a failure leaves the role and database to it.
            let prefix = "the database refused the login of STOREKEEPER_REPLICA_URL (\(url)): "
            try await eventually(timeout: .seconds(30), "the missing role reported") {
                records.messages(at: .error) == [prefix + "role \"\(url.username)\" does not exist; status reads stay on DATABASE_URL"]
            }
            try await client.query("CREATE ROLE \(unescaped: url.username) LOGIN", logger: TestDatabase.logger)
            try await eventually(timeout: .seconds(30), "the missing database reported in its turn") {
                records.messages(at: .error).last == prefix + "database \"\(url.database)\" does not exist; status reads stay on DATABASE_URL"
            }
            #expect(records.messages(at: .error).count == 2, "each reason once: \(records.messages(at: .error))")
            try await client.query("CREATE DATABASE \(unescaped: url.database)", logger: TestDatabase.logger)
            try await eventually(timeout: .seconds(30), "the login accepted, and said") {
                records.messages(at: .notice) == ["the database accepts the login of STOREKEEPER_REPLICA_URL now"]
            }
            try await client.query("DROP DATABASE \(unescaped: url.database) WITH (FORCE)", logger: TestDatabase.logger)
            try await client.query("DROP ROLE \(unescaped: url.username)", logger: TestDatabase.logger)
        }
    }
}
