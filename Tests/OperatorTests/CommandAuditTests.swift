import Foundation
import Jobs
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// A support lead reading the audit log finds the changes made from a shell beside the dashboard's: who (the shell's
/// user), what, on which account, before and after — and a change whose record could not be written says so loudly.
@Suite("storekeeper's changes from the command line, in the audit log")
struct CommandAuditTests {
    @Test(
        "grants add and end, jobs requeue and cancel each append an entry naming the shell's user (sudo's first), the command without its arguments, the exit status, the account and target, before and after; reads append none; after the account's erasure no entry names it or the grant's reason; a change the log refuses is made, reported in one line and exits 1"
    )
    func auditedFromTheShell() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { harness in
            let environment = ["DATABASE_URL": harness.databaseURL.urlString, "USER": "alice", "SUDO_USER": ""]
            func storekeeper(_ arguments: String..., sudo: String? = nil) async throws -> (Int32, String) {
                try await TestProcess.run(
                    "storekeeper", arguments, environment: environment.merging(["SUDO_USER": sudo ?? ""]) { $1 })
            }
            func entries() async throws -> [[String?]] {
                var rows: [[String?]] = []
                for try await (op, role, action, request, status, account, target, before, after) in try await harness.client.query(
                    "SELECT operator, role, action, request, status, account_id, target, before::text, after::text FROM operator_actions ORDER BY id",
                    logger: TestDatabase.logger
                ).decode((String, String, String, String, Int16, String?, String?, String?, String?).self) {
                    rows.append([op, role, action, request, String(status), account, target, before, after])
                }
                return rows
            }
            let account = "case-\(UUID().uuidString.prefix(8).lowercased())"
            let reason = "Alice Smith, ticket \(UUID().uuidString.prefix(6))"
            let (added, addOutput) = try await storekeeper(
                "grants", "add", account, "--tier", "pro", "--duration", "P30D", "--reason", reason, "--json")
            #expect(added == 0, "\(addOutput)")
            let grant = try #require(
                (try JSONSerialization.jsonObject(with: Data(addOutput.utf8)) as? [String: Any])?["id"] as? String, "\(addOutput)")
            _ = try await storekeeper("grants", "list", account)
            let (ended, endOutput) = try await storekeeper("grants", "end", grant, sudo: "bob")
            #expect(ended == 0, "\(endOutput)")
            // A job to requeue and one to cancel.
            let failing = try await JobsCommandTests.failedJob(beside: harness)
            #expect(try await storekeeper("jobs", "requeue", String(failing.id)).0 == 0)
            #expect(try await storekeeper("jobs", "requeue", "--state", "failed", "--dry-run").0 == 0)
            // One cancelled, one not: the entry says the command ended 1, as it did.
            #expect(try await storekeeper("jobs", "cancel", String(failing.id), "987654").0 == 1)

            // A replay that fails before writing anything changed nothing: no entry.
            #expect(try await storekeeper("replay", "--subscription", "nosuch", "--write").0 == 1)
            let log = try await entries()
            #expect(log.map { $0[2] } == ["grant.create", "grant.end", "jobs.requeue", "job.cancel"], "\(log)")
            #expect(log.map { $0[0] } == ["shell:alice", "shell:bob", "shell:alice", "shell:alice"])
            #expect(log.allSatisfy { $0[1] == "shell" } && log.map { $0[4] } == ["0", "0", "0", "1"], "\(log)")
            #expect(log.map { $0[3] } == ["storekeeper grants add", "storekeeper grants end", "storekeeper jobs requeue", "storekeeper jobs cancel"])
            #expect(log[0][5] == account && log[0][6] == grant && log[0][7] == nil && log[0][8]?.contains(#""tier": "pro""#) == true, "\(log[0])")
            #expect(log[1][5] == account && log[1][6] == grant, "\(log[1])")
            #expect(log[1][7]?.contains(#""status": "active""#) == true && log[1][8]?.contains(#""endReason": "#) == true, "\(log[1])")
            #expect(log[2][6] == String(failing.id) && log[2][8] == #"{"ids": [\#(failing.id)]}"#, "\(log[2])")
            #expect(log[3][6] == String(failing.id) && log[3][7] == #"{"state": "available"}"# && log[3][8] == #"{"state": "cancelled"}"#)
            #expect(log.contains { $0.contains { $0?.contains(reason) == true } }, "the grant's reason is in its entry")
            // Erased, the account is in no entry, and nor is the operator's reason (docs/operations.md, "Personal data").
            try await harness.withHTTP { http in
                let erasure = try await AccountErasureTests.requestErasure(of: account, client: http)
                #expect(erasure.status == .ok, "\(String(buffer: erasure.body))")
            }
            let erased = try await entries()
            #expect(erased.allSatisfy { !$0.contains { $0?.contains(account) == true || $0?.contains(reason) == true } }, "\(erased)")

            // The log refuses (here a trigger; in life a full disk, a revoked grant): the change stands, the command
            // says it was not audited and exits 1, so a script stops instead of repeating it.
            try await harness.client.query(
                """
                CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
                """, logger: TestDatabase.logger)
            try await harness.client.query(
                "CREATE TRIGGER refuse_audit BEFORE INSERT ON operator_actions FOR EACH ROW EXECUTE FUNCTION refuse_audit()",
                logger: TestDatabase.logger)
            let (refused, refusal) = try await storekeeper("grants", "add", account, "--tier", "basic", "--lifetime", "--reason", "goodwill")
            let lines = refusal.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n")
            #expect(refused == 1 && lines.count == 2, "\(refusal)")
            #expect(lines.last?.hasPrefix("storekeeper: the change was made, but its audit record could not be written (") == true, "\(refusal)")
            #expect(lines.last?.hasSuffix("); do not repeat it blindly") == true, "\(refusal)")
            #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = '\(account)' AND tier = 'basic'") == 1)
        }
    }
}
