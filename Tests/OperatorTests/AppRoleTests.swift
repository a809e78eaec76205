import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

/// docs/operations.md's "A separate application role", run as written: the migrations' role owns the database, the
/// document's grant block is run by it, and Storekeeper runs as the application role. What the app does works under
/// those grants; what would let the app's credentials rewrite the audit log is refused — helper-147's temporary-table
/// attack on the erasure function too, with temporary tables granted back for the test.
@Suite("A separate application role, granted as docs/operations.md says")
struct AppRoleTests {
    /// The document's block, with the example names replaced: one statement a line.
    static func grantStatements(owner: String, app: String, database: String) throws -> [String] {
        let text = try String(contentsOf: AppleSamples.repository.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- app-role-grants -->\n```sql\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return text[start.upperBound..<end.lowerBound].split(separator: "\n").map {
            String($0).replacingOccurrences(of: "sk_owner", with: owner).replacingOccurrences(of: "sk_app", with: app)
                .replacingOccurrences(of: "DATABASE storekeeper ", with: "DATABASE \(database) ")
        }
    }

    static func run(_ sql: String, as url: DatabaseURL) async throws {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
        }
    }

    /// The SQLSTATE `sql` fails with as `url`'s role, in a transaction rolled back whatever happens; nil when it ran.
    static func refusal(_ sql: String, as url: DatabaseURL) async throws -> String? {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) { client in
            try await client.withConnection { connection in
                // Rolled back when the client closes the connection: nothing here is kept.
                _ = try await connection.query("BEGIN", logger: TestDatabase.logger)
                do {
                    for statement in sql.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) where !statement.isEmpty {
                        // Drained: a function's error can come after the rows' description, while they are read.
                        for try await _ in try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger) {}
                    }
                    return nil
                } catch let error as PSQLError {
                    return error.serverInfo?[.sqlState] ?? "no SQLSTATE: \(String(reflecting: error))"
                }
            }
        }
    }

    @Test(
        "with the document's grants the app role serves, applies, spends and erases, and its audited writes are logged; it cannot update, delete, truncate or unhook the log, make temporary tables, or create; granted temporary tables back, a temporary `erasures` no longer lets the erasure function rewrite the log; migrate as the app role says to run it as the owner"
    )
    func documentedGrants() async throws {
        let admin = try TestDatabase.adminURL()
        let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        let (ownerRole, appRole) = ("sk_owner_\(suffix)", "sk_app_\(suffix)")
        try await Self.run("CREATE ROLE \(ownerRole) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE", as: admin)
        try await Self.run("CREATE ROLE \(appRole) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE", as: admin)
        do {
            try await documentedGrants(admin: admin, ownerRole: ownerRole, appRole: appRole)
        } catch {
            try? await Self.run("DROP ROLE IF EXISTS \(appRole)", as: admin)
            try? await Self.run("DROP ROLE IF EXISTS \(ownerRole)", as: admin)
            throw error
        }
        try await Self.run("DROP ROLE \(appRole)", as: admin)
        try await Self.run("DROP ROLE \(ownerRole)", as: admin)
    }

    private func documentedGrants(admin: DatabaseURL, ownerRole: String, appRole: String) async throws {
        try await TestDatabase.withFreshDatabase { url in
            var owner = url
            owner.username = ownerRole
            var app = url
            app.username = appRole
            // The app role against a database nothing was applied to: migrate refuses, saying whose job it is.
            var environment = ProcessInfo.processInfo.environment
            environment["DATABASE_URL"] = app.urlString
            try await Self.run("ALTER DATABASE \(url.database) OWNER TO \(ownerRole)", as: admin)
            let (status, output) = try await TestProcess.run("storekeeper", ["migrate"], environment: environment)
            #expect(status == 1, "\(output)")
            #expect(output.contains("storekeeper migrate must run as the role that owns the database"), "\(output)")

            // The owner migrates all files but the last, as the release before would have; the grants follow.
            let files = try FileManager.default.contentsOfDirectory(at: SchemaMigrator.defaultDirectory(), includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
            let before = FileManager.default.temporaryDirectory.appendingPathComponent("sk-sql-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: before) }
            try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
            for file in files.dropLast() { try FileManager.default.copyItem(at: file, to: before.appendingPathComponent(file.lastPathComponent)) }
            func migrate(from directory: URL) async throws {
                _ = try await PostgresClient.withRunning(owner.clientConfiguration(), logger: TestDatabase.logger) { client in
                    try await SchemaMigrator(client: client, directory: directory, logger: TestDatabase.logger).migrate()
                }
                for statement in try Self.grantStatements(owner: ownerRole, app: appRole, database: url.database) {
                    try await Self.run(statement, as: owner)
                }
            }
            try await migrate(from: before)
            // The new release's last file pending: the app role cannot apply it (nor record any file), and is told whose
            // job it is.
            let (pending, pendingOutput) = try await TestProcess.run("storekeeper", ["migrate"], environment: environment)
            #expect(pending == 1 && pendingOutput.contains("storekeeper migrate must run as the role that owns the database"), "\(pendingOutput)")
            try await migrate(from: SchemaMigrator.defaultDirectory())
            // Nothing pending: migrate as the app role (a unit that migrates before each start) has nothing to do.
            let (upToDate, upToDateOutput) = try await TestProcess.run("storekeeper", ["migrate"], environment: environment)
            #expect(upToDate == 0 && upToDateOutput.contains("database is up to date"), "\(upToDateOutput)")

            try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys], database: app) { harness in
                try await harness.withHTTP { client in
                    let (_, _, pseudonym) = try await AccountErasureTests.subscribeAndErase(harness: harness, client: client)
                    // The erasure was audited and rewrote the log through the owner's function.
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM operator_actions WHERE action = 'account.erase'") == 1)
                    #expect(try await harness.count("SELECT count(*) FROM erasures WHERE pseudonym = '\(pseudonym.text)'") >= 1)
                }
            }
            try await Self.run(
                "INSERT INTO operator_actions (at, operator, role, action, request, status, account_id, target) VALUES (now(), 'ada', 'admin', 'grant.create', 'POST /admin', 201, 'victim', 'g1')",
                as: app)

            let insufficientPrivilege = "42501"
            for attack in [
                "UPDATE operator_actions SET account_id = 'ghost' WHERE account_id = 'victim'",
                "DELETE FROM operator_actions WHERE account_id = 'victim'",
                "TRUNCATE operator_actions",
                "ALTER TABLE operator_actions DISABLE TRIGGER ALL",
                "DROP TABLE operator_actions",
                "DELETE FROM erasures",
                "SET session_replication_role = replica",
                "CREATE TABLE mine (id int)",
                "CREATE TEMP TABLE erasures (pseudonym text, transaction xid8 DEFAULT pg_current_xact_id())",
            ] {
                #expect(try await Self.refusal(attack, as: app) == insufficientPrivilege, "\(attack)")
            }
            // Temporary tables granted back (a database set up without the block's first line): the erasure function
            // reads the real `erasures`, which names no erasure of this transaction, and refuses.
            try await Self.run("GRANT TEMP ON DATABASE \(url.database) TO \(appRole)", as: admin)
            let shadowed = try await Self.refusal(
                """
                CREATE TEMP TABLE erasures (pseudonym text, transaction xid8 DEFAULT pg_current_xact_id());
                INSERT INTO pg_temp.erasures (pseudonym) VALUES ('ghost');
                GRANT SELECT ON pg_temp.erasures TO PUBLIC;
                SELECT erase_operator_actions('victim', 'ghost')
                """, as: app)
            #expect(shadowed == insufficientPrivilege)
            try await PostgresClient.withRunning(owner.clientConfiguration(), logger: TestDatabase.logger) { client in
                let rows = try await client.query("SELECT count(*) FROM operator_actions WHERE account_id = 'victim'", logger: TestDatabase.logger)
                for try await count in rows.decode(Int.self) { #expect(count == 1) }
            }
        }
    }
}
