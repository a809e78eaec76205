import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// The operator's list of what Google sent about a subscription (`accounts show`, the dashboard's timeline) finds the
/// notifications of every token of its chain, whichever token the subscription is filed under: a chain's first token
/// may become known after the subscription was (an older token read later), and the derived chain is then filed
/// under it while the subscription keeps its id.
@Suite("Google Play's notifications in the operator's list, on real PostgreSQL")
struct PlayNotificationListTests {
    @Test("a subscription filed under a later token of its chain lists the notifications of all three tokens, by the reference's names")
    func listedByAnyToken() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 2) { client in
            let tag = UUID().uuidString.prefix(8).lowercased()
            let (first, second, third) = ("t0-\(tag)", "t1-\(tag)", "t2-\(tag)")
            try await client.query(
                """
                INSERT INTO google_subscriptions (id, current_token, tokens, state, will_renew, is_trial, is_test, periods, derived_at)
                VALUES (\(first), \(third), \([first, second, third]), 'SUBSCRIPTION_STATE_ACTIVE', true, false, false, 3, now())
                """, logger: TestDatabase.logger)
            for (token, kind, type) in [(first, "subscription", 4), (second, "subscription", 2), (third, "voided_purchase", 0)] {
                try await client.query(
                    """
                    INSERT INTO google_notifications (message_id, subscription, package_name, event_time, kind, notification_type, purchase_token,
                        body, outcome)
                    VALUES (\("m-\(token)"), 'projects/p/subscriptions/s', 'com.example', now(), \(kind), \(type == 0 ? nil : type), \(token),
                        '\\x7b7d'::bytea, 'read')
                    """, logger: TestDatabase.logger)
            }
            let records = AccountRecords(client: client, logger: TestDatabase.logger)
            // The subscription is known by its second token; the chain is filed under the first.
            let listed = try await records.events(ofSubscriptions: [second], account: AccountID(UUID()))
            #expect(listed.map(\.type).sorted() == ["SUBSCRIPTION_PURCHASED", "SUBSCRIPTION_RENEWED", "VOIDED_PURCHASE"], "\(listed)")
            #expect(listed.allSatisfy { $0.originalTransactionId == first && $0.outcome == "read" })
            #expect(try await records.events(ofSubscriptions: ["t9-\(tag)"], account: AccountID(UUID())).isEmpty)
        }
    }
}
