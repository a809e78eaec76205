import Foundation
import TestSupport
import Testing

@testable import IntegrationSupport

/// Apple's real signed sandbox data (`../shared/fixtures/apple-real/`) through the real intake, claim endpoint and
/// worker.
@Suite("Real Apple data, on real PostgreSQL", .enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
struct RealAppleDataTests {
    static let samples = AppleSamples.directory

    static func sample(_ name: String) throws -> String {
        try String(contentsOf: samples.appendingPathComponent(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var appleRoot: [String] { [AppleSamples.rootCertificate.path] }

    @Test(
        "both real notifications are accepted and processed without error",
        arguments: [
            ("46-notification.jws", "com.tuyoo.testing", "applied"), ("49-notification.jws", "com.Abilities", "recorded"),
        ])
    func notifications(file: String, bundleId: String, outcome: String) async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_BUNDLE_ID": bundleId], rootPaths: Self.appleRoot) { harness in
            try await harness.withHTTP { client in
                let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": try Self.sample(file)]))
                #expect(try response.answer(IntakeAnswer.self).status == "accepted")
            }
            try await eventually("the notification to be processed") {
                try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = '\(outcome)'") == 1
            }
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 1)
            guard file.hasPrefix("46") else { return }
            try await harness.withHTTP { client in
                let subscription = try await client.getWithKey("/v1/subscriptions/2000000310325824").answer(SubscriptionDetailAnswer.self)
                #expect(subscription.willRenew == false)
                #expect(subscription.lastEventType == "DID_CHANGE_RENEWAL_STATUS")
                #expect(subscription.productId == "com.tuyoo.testing.test008")
                // Its period ended in 2023: by the clock it is expired now.
                #expect(subscription.status == "expired")
            }
        }
    }

    @Test("real StoreKit transactions are claimed: a purchase, and a crossgrade of another subscription on top of its resubscription")
    func transactions() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_BUNDLE_ID": "com.app.qysmat"], rootPaths: Self.appleRoot) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                for file in ["53-transaction.jws", "55-transaction.jws", "57-transaction.jws"] {
                    let response = try await client.postTransaction(try Self.sample(file), account: account)
                    #expect(response.status == .ok, "\(file): \(String(buffer: response.body))")
                }
                let crossgraded = try await client.getWithKey("/v1/subscriptions/2000000302178785").answer(SubscriptionDetailAnswer.self)
                #expect(crossgraded.productId == "com.app.qysmat.premium.parent.joint_1.subscription")
                #expect(crossgraded.accountId == account.uuidString.lowercased())
                #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(account.uuidString.lowercased())'") == 2)
                // Sandbox periods of 2023 are long over: by the clock the account is free and had subscriptions.
                let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                #expect(status.state == "free_with_credits")
                #expect(status.hadSubscription)
            }
        }
    }

    @Test("a 2021 transaction without environment is refused deliberately, with the reason")
    func transactionWithoutEnvironment() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_BUNDLE_ID": "club.omnichess.ios"], rootPaths: Self.appleRoot) { harness in
            try await harness.withHTTP { client in
                let response = try await client.postTransaction(try Self.sample("61-transaction.jws"), account: UUID())
                #expect(response.status == .unprocessableContent)
                #expect(try response.answer(ErrorAnswer.self).message.contains("no environment"))
            }
        }
    }
}
