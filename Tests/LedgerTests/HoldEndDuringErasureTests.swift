import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// A hold is ended only under its account's lock, even when the account it was read under changes while the end waits
/// for that lock (sql/0056): otherwise the expiry job or a retry, under the new account's lock, could end the same hold
/// at the same time, and the end that lost would still post its charge.
@Suite("A hold's end waiting on an erasure")
struct HoldEndDuringErasureTests {
    @Test("a release by id that waited while an erasure moved the hold to the pseudonym is not found; the hold stays held for that lock")
    func releaseWaitingOnAnErasure() async throws {
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                let account = "moving-\(UUID().uuidString.prefix(8).lowercased())"
                let pseudonym = "pseudonym-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "exports", 7)
                let held = try await CreditHoldTests.hold(client, account, "exports", 6, key: "m")
                let id = try held.answer(CreditHoldAnswer.self).id
                // This database's only (the tests share a cluster).
                let waiting = """
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
                // An erasure's transaction as ErasedAccounts runs it: the account's lock held while its holds move.
                let release = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await connection.query(
                        "SELECT pg_advisory_xact_lock(hashtextextended('account:' || \(account), 0))", logger: TestDatabase.logger)
                    try await connection.query(
                        "UPDATE credit_holds SET account_id = \(pseudonym) WHERE id = \(id)::uuid", logger: TestDatabase.logger)
                    // Asked while the lock is held: the release reads the hold's account, then waits for its lock.
                    let release = Task { try await CreditHoldTests.post(client, "/v1/holds/\(id)/release", "") }
                    try await eventually("the release to wait for the account's lock") { try await harness.count(waiting) > 0 }
                    return release
                }
                let answer = try await release.value
                #expect(answer.status == .notFound, "\(answer.status) \(String(buffer: answer.body))")
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_holds WHERE id = '\(id)' AND state = 'held' AND account_id = '\(pseudonym)'")
                        == 1)
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'hold-%:\(id):%'") == 0)
            }
        }
    }
}
