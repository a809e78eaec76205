import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// Databases written before subscriptions were derived from facts keyed cycle credits by transaction and month
/// (`cycle:<transactionId>:m<k>:<meter>`), and granted a restored copy of a period a second time. `storekeeper replay
/// --all` finds such differences, `--write` posts them as corrections with their own keys — no row is rewritten — and
/// a second run finds nothing.
@Suite("Existing ledgers upgrade themselves, as processes")
struct LegacyLedgerTests {
    @Test("a restored copy granted twice before 0007: replay reports the correction, --write posts it once, rows stay")
    func restoredCopyCorrected() async throws {
        try await StorekeeperHarness.run { harness in
            let account = UUID()
            let otid = String(Int.random(in: 2_000_000_000...2_999_999_999))
            let start = Date().addingTimeInterval(-86_400)
            let end = start.addingTimeInterval(30 * 86_400)
            @Sendable func transaction(_ id: String) -> TransactionPayload {
                var transaction = TransactionPayload(
                    transactionId: id, originalTransactionId: otid, productId: "pro.monthly", bundleId: StorekeeperHarness.bundleId,
                    environment: .sandbox, signedDate: Int64(Date().timeIntervalSince1970 * 1000) - 60_000)
                transaction.type = "Auto-Renewable Subscription"
                transaction.webOrderLineItemId = "\(otid).0"
                transaction.purchaseDate = Int64(start.timeIntervalSince1970 * 1000)
                transaction.expiresDate = Int64(end.timeIntervalSince1970 * 1000)
                transaction.appAccountToken = account.uuidString.lowercased()
                return transaction
            }
            try await harness.withHTTP { client in
                let subscribed = SimulatedEvent(
                    notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", status: 1,
                    signedDate: Int64(Date().timeIntervalSince1970 * 1000) - 60_000, transaction: transaction(otid), renewalInfo: nil)
                #expect(try await client.postNotification(try harness.signer.requestBody(for: subscribed)).status == .ok)
                try await eventually("the purchase to be applied") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome IS NOT NULL") == 1
                }
                let restored = try harness.signer.signer.sign(transaction(otid + "7"))
                #expect(try await client.postTransaction(restored, account: account).status == .ok)
                #expect(try await Self.remaining(client, account) == 1000, "the restored copy is the same billing period")
            }

            // The ledger as the previous version wrote it: one month-0 bucket per copy, each granted.
            try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await connection.query("DELETE FROM credit_ledger", logger: TestDatabase.logger)
                try await connection.query("DELETE FROM credit_buckets", logger: TestDatabase.logger)
                for id in [otid, otid + "7"] {
                    let key = "cycle:\(id):m0:ai_requests"
                    try await connection.query(
                        """
                        INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, valid_from, valid_until, price)
                        VALUES (\(key), 'ai_requests', 'cycle', \(otid), \(id), \(start), \(end), 9990)
                        """,
                        logger: TestDatabase.logger)
                    try await connection.query(
                        "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (\("grant:\(id):m0:ai_requests"), \(key), 1000, 'cycle grant')",
                        logger: TestDatabase.logger)
                }
            }
            // Written behind the writers' back: this process's status cache is told, as a writer would.
            harness.components.statusCache.invalidateAll()
            try await harness.withHTTP { client in
                let remaining = try await Self.remaining(client, account)
                #expect(remaining == 2000)
            }

            let environment = ["DATABASE_URL": harness.databaseURL.urlString]
            let (reportStatus, report) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: environment)
            #expect(reportStatus == 3)
            // One of the two month-0 buckets keeps the period's grant; the other is corrected to nothing.
            let corrections = report.split(separator: "\n").filter { $0.contains("correction:cycle:") }
            #expect(corrections.count == 1)
            #expect(corrections.first?.contains("ledger (account \(account.uuidString.lowercased())): correction:cycle:") == true)
            #expect(corrections.first?.contains(":m0:ai_requests:0 -1000 (grant corrected)") == true)
            let (writeStatus, _) = try await TestProcess.run("storekeeper", ["replay", "--all", "--write"], environment: environment)
            #expect(writeStatus == 0)
            let (againStatus, again) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: environment)
            #expect(againStatus == 0)
            #expect(again.contains("\(otid): matches its stored facts"))
            try await harness.withHTTP { client in
                let remaining = try await Self.remaining(client, account)
                #expect(remaining == 1000)
            }
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'grant:%'") == 2)
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'correction:%'") == 1)
        }
    }

    static func remaining(_ client: any TestClientProtocol, _ account: UUID) async throws -> Int? {
        let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
        return status.credits["ai_requests"]?.remaining.map(Int.init)
    }
}
