import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

/// Apple's 2025–26 payloads, as its changelogs describe them, through the real intake and worker: each is verified,
/// stored and processed without a failed job, and a subscription's access is not disturbed by the kinds whose
/// meaning Apple has not settled (Advanced Commerce's METADATA_UPDATE, MIGRATION, PRICE_CHANGE).
@Suite("Apple's 2025–26 payloads")
struct ApplePayloads2026Tests {
    @Test(
        "external purchase tokens (CREATED, ACTIVE_TOKEN_REMINDER), RESCIND_CONSENT, Advanced Commerce kinds and commitment fields are accepted, stored and processed"
    )
    func acceptedStoredProcessed() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let signer = harness.signer.signer
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                // A renewal carrying every 2025–26 transaction and renewal-info field.
                try await flow.send(.subscribe)
                try await flow.send(.renew) { event in
                    event.transaction?.appTransactionId = "704289572311476853"
                    event.transaction?.previousOriginalTransactionId = "2000000050"
                    event.transaction?.billingPlanType = "MONTHLY"
                    event.transaction?.commitmentInfo = .init(
                        billingPeriodNumber: 2, totalBillingPeriods: 12, commitmentExpiresDate: 1_798_761_600_000, commitmentPrice: 119_880)
                    event.transaction?.advancedCommerceInfo = .object(["requestReferenceId": .string("r-1")])
                    event.renewalInfo?.appTransactionId = "704289572311476853"
                    event.renewalInfo?.renewalBillingPlanType = "MONTHLY"
                    event.renewalInfo?.eligibleWinBackOfferIds = ["winback_1"]
                    event.renewalInfo?.commitmentInfo = .init(
                        commitmentAutoRenewProductId: "pro.monthly", commitmentAutoRenewStatus: 0, commitmentRenewalBillingPlanType: "MONTHLY",
                        commitmentRenewalDate: 1_798_761_600_000, commitmentRenewalPrice: 9_990)
                }
                // Advanced Commerce's kinds about the same subscription: recorded, access unchanged.
                for type in ["METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE"] {
                    try await flow.send(.renew) { event in
                        event.notificationType = type
                        event.subtype = nil
                        event.transaction?.advancedCommerceInfo = .object(["requestReferenceId": .string("r-\(type)")])
                    }
                }
                let status = try await flow.statusAnswer()
                #expect(status.state == "subscribed", "\(status)")

                // Payloads without `data`.
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                var app = AppTransactionPayload(
                    receiptType: .sandbox, appAppleId: nil, bundleId: StorekeeperHarness.bundleId, receiptCreationDate: now - 86_400_000)
                app.appTransactionId = "704289572311476853"
                app.originalPlatform = "iOS"
                var payloads: [NotificationPayload] = [
                    NotificationPayload(
                        notificationType: "RESCIND_CONSENT", notificationUUID: UUID().uuidString.lowercased(),
                        appData: NotificationAppData(
                            appAppleId: nil, bundleId: StorekeeperHarness.bundleId, environment: .sandbox,
                            signedAppTransactionInfo: try signer.sign(app)),
                        signedDate: now)
                ]
                for subtype in ["CREATED", "ACTIVE_TOKEN_REMINDER", "UNREPORTED"] {
                    payloads.append(
                        NotificationPayload(
                            notificationType: "EXTERNAL_PURCHASE_TOKEN", subtype: subtype, notificationUUID: UUID().uuidString.lowercased(),
                            externalPurchaseToken: ExternalPurchaseToken(
                                externalPurchaseId: "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e", tokenCreationDate: now - 60_000, appAppleId: nil,
                                bundleId: StorekeeperHarness.bundleId, tokenType: "SERVICES", tokenExpirationDate: now + 86_400_000),
                            signedDate: now))
                }
                for payload in payloads {
                    let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": try signer.sign(payload)]))
                    #expect(
                        response.status == .ok && (try? response.answer(IntakeAnswer.self))?.status == "accepted",
                        "\(payload.notificationType): \(String(buffer: response.body))")
                }
                try await eventually("every notification processed") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                }
                #expect(try await harness.count("SELECT count(*) FROM notifications") == 9)
                #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'") == 0)
                #expect(try await harness.count("SELECT count(*) FROM job_history WHERE kind = 'apply-notification' AND attempt > 1") == 0)
                #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE status = 'active'") == 1)
                // What was stored reads back whole: the replay of every notification derives the same state.
                let (replayStatus, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: harness.processEnvironment)
                #expect(replayStatus == 0, "\(output)")
            }
        }
    }
}
