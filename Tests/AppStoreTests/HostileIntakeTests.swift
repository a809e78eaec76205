import AppStoreModels
import Foundation
import HTTPTypes
import HostileInput
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import Persistence
import StorekeeperRuntime
import Subscriptions
import TestSupport
import Testing

@testable import IntegrationSupport

/// Authentic but absurd notifications and hostile fuzz cases through the real intake, worker and PostgreSQL: each is
/// answered as issue 20 says (200 and `rejected_content` recorded with its reason, or 400), nothing fails a job, and
/// an operator finds the rejection in the account's history.
@Suite("Hostile input at the intake, on real PostgreSQL")
struct HostileIntakeTests {
    static func event(_ harness: StorekeeperHarness, account: UUID = UUID()) -> SimulatedEvent {
        SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: account), at: Date())
    }

    static func body(_ signedPayload: String) throws -> Data {
        try JSONEncoder().encode(["signedPayload": signedPayload])
    }

    @Test("each named absurdity: 200 and rejected_content with a reason, applied, or 400 — and no job fails")
    func namedAbsurdities() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var stored: [(UUID, HostileContent.Mutation)] = []
                for mutation in HostileContent.mutations {
                    let uuid = UUID()
                    let payload = try HostileContent.signedPayload(
                        Self.event(harness), mutations: [mutation], signer: harness.signer, notificationUUID: uuid)
                    let response = try await client.postNotification(try Self.body(payload))
                    #expect(response.status == (mutation.expectation == .refused ? .badRequest : .ok), "\(mutation.name)")
                    if mutation.expectation != .refused { stored.append((uuid, mutation)) }
                }
                try await eventually(timeout: .seconds(30), "every stored notification to be processed") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                }
                for (uuid, mutation) in stored {
                    let rejected = try await harness.count(
                        "SELECT count(*) FROM notifications WHERE notification_uuid = '\(uuid)' AND apply_outcome = 'rejected_content' AND rejected_reason <> ''"
                    )
                    #expect((rejected == 1) == (mutation.expectation == .rejectedContent), "\(mutation.name)")
                }
                #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'") == 0)
                #expect(try await harness.count("SELECT count(*) FROM job_history WHERE attempt > 1") == 0)
            }
        }
    }

    @Test("a rejected notification shows in its account's history with the reason, creates no subscription; a claim of such content is 400")
    func rejectionIsVisibleToOperators() async throws {
        try await StorekeeperHarness.run { harness in
            let account = UUID()
            let payload = try HostileContent.signedPayload(
                Self.event(harness, account: account),
                mutations: [.init(.transaction, "expiresDate", "9223372036854775807", .rejectedContent)], signer: harness.signer)
            try await harness.withHTTP { client in
                #expect(try await client.postNotification(try Self.body(payload)).status == .ok)
                try await eventually("the notification to be processed") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == 1
                }
                let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                #expect(!status.entitled)
            }
            let events = try await AccountRecords(client: harness.client, logger: TestDatabase.logger)
                .events(ofSubscriptions: [], account: AccountID(account))
            #expect(events.count == 1)
            #expect(events.first?.outcome == "rejected_content")
            #expect(events.first?.outcomeText.contains("expiresDate 9223372036854775807") == true)

            // A client's claim of such a transaction is refused outright.
            var transaction = try #require(Self.event(harness).transaction)
            transaction.purchaseDate = Int64.min
            let signed = try harness.signer.signer.sign(transaction)
            try await harness.withHTTP { client in
                let response = try await client.execute(
                    uri: "/v1/accounts/\(UUID())/transactions", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(data: try JSONEncoder().encode(["signedTransaction": signed])))
                #expect(response.status == .badRequest)
                #expect(try response.answer(ErrorAnswer.self).error == "rejected_content")
            }
        }
    }

    @Test("a few hundred fuzz cases from a trusted and an untrusted chain: 200 or 400 only, nothing forged stored, no job fails")
    func fuzzing() async throws {
        try await StorekeeperHarness.run { harness in
            let stranger = NotificationSigner(signer: try JWSSigner(chain: try LocalSigningChain.generate()), bundleId: StorekeeperHarness.bundleId)
            var random = SplitMix64(state: 0x20_1124)
            let cases = HostileContent.fuzzed(count: 60, using: &random)
            try await harness.withHTTP { client in
                var accepted = 0
                for mutations in cases {
                    await Task.yield()
                    let good = try HostileContent.signedPayload(Self.event(harness), mutations: mutations, signer: harness.signer)
                    let answer = try await client.postNotification(try Self.body(good)).status
                    #expect(answer == .ok || answer == .badRequest, "\(mutations.map(\.name))")
                    if answer == .ok { accepted += 1 }
                    let forged = try HostileContent.signedPayload(Self.event(harness), mutations: mutations, signer: stranger)
                    let refused = try await client.postNotification(try Self.body(forged)).status
                    #expect(refused == .badRequest || refused == .unauthorized, "\(mutations.map(\.name))")
                }
                #expect(try await harness.count("SELECT count(*) FROM notifications") == accepted)
                try await eventually(timeout: .seconds(60), "every accepted case to be processed") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                }
                #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'") == 0)
            }
        }
    }
}
