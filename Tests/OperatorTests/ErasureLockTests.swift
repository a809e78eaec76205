import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Erasing an id again moves what it gained since onto its pseudonym: a writer of that account. Every writer of an
/// account takes its lock, and the applies count on it — an apply for the pseudonym works its events' status out from
/// what it read under that lock (sql/0054) — so the erasure takes the pseudonym's lock too.
@Suite("Personal data: erasing again waits for the pseudonym's lock")
struct ErasureLockTests {
    @Test("a second erasure of an id that gained a grant since waits while another transaction holds its pseudonym's lock")
    func eraseAgainWaitsForThePseudonym() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { harness in
            try await harness.withHTTP { client in
                let (_, id, pseudonym) = try await AccountErasureTests.subscribeAndErase(harness: harness, client: client)
                // The app still names the id: an operator grants it something after its erasure.
                let granted = try await client.execute(
                    uri: "/admin/accounts/\(id)/grants", method: .post, headers: AccountErasureTests.admin,
                    body: ByteBuffer(string: #"{"tier": "max", "duration": "P7D", "reason": "after the erasure"}"#))
                #expect(granted.status == .created, "\(String(buffer: granted.body))")

                let (held, holding) = AsyncStream<Void>.makeStream()
                async let holder: Void = harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await harness.components.credits.lockAccount(pseudonym, on: connection)
                    holding.yield()
                    try await eventually("the second erasure waits for the pseudonym's lock") {
                        try await harness.count(
                            """
                            SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                            """) == 1
                    }
                }
                for await _ in held { break }
                let again = try await AccountErasureTests.requestErasure(of: id, client: client)
                try await holder
                #expect(again.status == .ok, "\(String(buffer: again.body))")
                #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = '\(pseudonym)'") == 1)
            }
        }
    }
}
