import Application
import Foundation
import HummingbirdTesting
import NIOCore
import Persistence
import Testing

@testable import IntegrationSupport

/// The usage chart of a spend given back after an upgrade, as the business reads it (docs/credits.md, "Giving a spend
/// back": negative use on the day it was given back). The customer used nothing in the end, so no tier shows use and
/// none shows negative use — though the spend's credits went back to the upgrade's carry-over, a top-up bucket.
@Suite("Usage analytics: a spend given back is undone where it was counted")
struct UsageReversalAnalyticsTests {
    @Test("Pro's 100 spent, the upgrade to Max, the spend given back: every tier's credits_spent is 0 that day, none negative")
    func reversalAfterUpgrade() async throws {
        let keys = ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:viewer-key-reversal"]
        try await StorekeeperHarness.run(environment: keys) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                try await flow.send(.upgrade, target: "max.monthly")
                let givenBack = try await client.execute(
                    uri: "/v1/accounts/\(account.uuidString.lowercased())/usage/lookup/reverse", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                #expect(givenBack.status == .ok, "\(String(buffer: givenBack.body))")
                #expect(try givenBack.answer(SpendReversalAnswer.self).returned == 100, "\(String(buffer: givenBack.body))")
                let catalogue = harness.components.configuration.catalogue
                while try await harness.client.withTransaction(
                    logger: TestDatabase.logger,
                    { connection in
                        try await AnalyticsRollups(logger: TestDatabase.logger).rollUpUsage(
                            before: Date().addingTimeInterval(60), tier: { AnalyticsCompactionJob.tier(of: $0, catalogue: catalogue) }, on: connection
                        )
                    }
                ).more {}
                let today = Date().formatted(.iso8601.year().month().day())
                let response = try await client.execute(
                    uri: "/admin/analytics/usage?from=\(today)&to=\(today)&environment=sandbox", method: .get,
                    headers: [.authorization: "Bearer viewer-key-reversal"])
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                let spent = try response.answer(AnalyticsChartAnswer.self).series.filter { $0.meter == "ai_requests" && $0.name == "credits_spent" }
                #expect(!spent.isEmpty, "\(String(buffer: response.body))")
                for series in spent {
                    #expect(series.points.allSatisfy { ($0.value ?? 0) == 0 }, "\(series.tier ?? "-"): \(series.points)")
                }
            }
        }
    }
}
