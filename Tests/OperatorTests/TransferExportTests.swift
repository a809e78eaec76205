import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// An export after a subscription moved between accounts (`STOREKEEPER_TRANSFER_POLICY=transfer`): each account's
/// export holds its own spends, claims and ends, wherever they were charged, and not the other's (Article 15 gives a
/// person their data, not another's). The subscription's cycle buckets hold both accounts' spends.
@Suite("Personal data: the export of a subscription that changed hands")
struct TransferExportTests {
    static let admin: HTTPFields = [.authorization: "Bearer admin-key-transfer-export", .contentType: "application/json"]

    static func holdings(_ account: UUID, client: any TestClientProtocol) async throws -> (text: String, holdings: [String: Any]) {
        let response = try await client.execute(
            uri: "/admin/accounts/\(account.uuidString.lowercased())/export", method: .post, headers: admin, body: ByteBuffer(string: "{}"))
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        // `holdings` is open in the contract (the rows as stored): read raw on purpose.
        return (String(buffer: response.body), response.json["holdings"] as? [String: Any] ?? [:])
    }

    @Test(
        "the former holder spent under its own key, then the subscription moved: the new holder's export has neither that spend nor the former's claims; the former's export still has its spend"
    )
    func eachAccountsOwn() async throws {
        let environment = ["STOREKEEPER_ADMIN_KEYS": "ada:admin:admin-key-transfer-export", "STOREKEEPER_TRANSFER_POLICY": "transfer"]
        try await StorekeeperHarness.run(environment: environment) { harness in
            try await harness.withHTTP { client in
                let (former, taker) = (UUID(), UUID())
                var flow = LifecycleFlow(harness: harness, client: client, account: former)
                try await flow.send(.subscribe)
                #expect(try await client.spend(former, amount: 3, key: "former-secret-42").status == .ok)
                // Renewed under another account's token: it takes the subscription, with what is left of the cycle.
                flow.subscription.accountId = taker
                try await flow.send(.renew)
                #expect(try await harness.count("SELECT count(*) FROM account_transfers WHERE to_account = '\(taker.uuidString.lowercased())'") == 1)
                #expect(try await client.spend(taker, amount: 2, key: "taker-own-7").status == .ok)

                let (text, holdings) = try await Self.holdings(taker, client: client)
                let formerId = former.uuidString.lowercased()
                let keys = (holdings["creditLedger"] as? [[String: Any]] ?? []).compactMap { $0["operation_key"] as? String }
                #expect(keys.contains { $0.contains(":taker-own-7:") }, "its own spend: \(keys)")
                #expect(!keys.contains { $0.contains(formerId) }, "\(keys)")
                #expect(!text.contains("former-secret-42"), "the former holder's key is nowhere in the export")
                for name in ["claimsAndServerSnapshots", "archive"] {
                    let owners = (holdings[name] as? [[String: Any]] ?? []).compactMap { $0["account_id"] as? String }
                    #expect(!owners.contains(formerId), "\(name): \(owners)")
                }
                #expect(!(holdings["subscriptions"] as? [[String: Any]] ?? []).isEmpty, "it holds the subscription")

                let formers = try await Self.holdings(former, client: client).holdings
                let formerKeys = (formers["creditLedger"] as? [[String: Any]] ?? []).compactMap { $0["operation_key"] as? String }
                #expect(formerKeys.contains { $0.contains(":\(formerId):former-secret-42:") }, "its spend before the move: \(formerKeys)")
                #expect(!formerKeys.contains { $0.contains("taker-own-7") })
            }
        }
    }
}
