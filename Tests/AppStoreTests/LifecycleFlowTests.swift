import AppStoreModels
import Foundation
import LocalSigning
import Testing

@testable import IntegrationSupport

/// The main lifecycle flows end to end: signed notifications over HTTP, applied by a real worker on real
/// PostgreSQL, read back through the service API.
@Suite("Lifecycle flows, on real PostgreSQL")
struct LifecycleFlowTests {
    @Test("subscribe → renew → cancel → expire → resubscribe")
    func mainFlow() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe)
                #expect(try await flow.statusAnswer().state == "subscribed")
                let firstEnd = flow.period!.end
                try await flow.send(.renew)
                let renewed = try await flow.detailAnswer()
                #expect(renewed.expiresAt == firstEnd.addingTimeInterval(30 * 86_400).formatted(.iso8601))
                #expect(renewed.lastEventType == "DID_RENEW")
                try await flow.send(.cancel)
                let cancelled = try await flow.statusAnswer()
                #expect(cancelled.state == "subscribed")
                #expect(cancelled.subscription?.willRenew == false)
                try await flow.send(.expire)
                let expired = try await flow.statusAnswer()
                #expect(expired.state == "free_with_credits")
                #expect(expired.entitled == false)
                #expect(expired.hadSubscription == true)
                #expect(try await flow.archive() == ["EXPIRED_VOLUNTARY"])
                try await flow.send(.subscribe) { $0.subtype = "RESUBSCRIBE" }
                let back = try await flow.statusAnswer()
                #expect(back.state == "subscribed")
                #expect(back.subscription?.willRenew == true)
                #expect(try await flow.archive() == ["EXPIRED_VOLUNTARY"])
            }
        }
    }

    @Test("upgrade: new product and period at once")
    func upgrade() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe)
                let upgrade = try await flow.send(.upgrade, target: "max.monthly")
                let detail = try await flow.detailAnswer()
                #expect(detail.productId == "max.monthly")
                #expect(detail.expiresAt == LifecycleFlow.date(upgrade.transaction!.expiresDate!).formatted(.iso8601))
                #expect(detail.pendingProductId == nil)
                #expect(try await flow.statusAnswer().state == "subscribed")
            }
        }
    }

    @Test("a downgrade is queued, cancelled, queued again and applied at the renewal")
    func downgrade() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe)
                try await flow.send(.downgrade, target: "basic.monthly")
                var detail = try await flow.detailAnswer()
                #expect(detail.pendingProductId == "basic.monthly")
                #expect(detail.productId == "pro.monthly")
                try await flow.send(.downgrade, target: "pro.monthly") { $0.subtype = nil }
                #expect(try await flow.detailAnswer().pendingProductId == nil)
                try await flow.send(.downgrade, target: "basic.monthly")
                flow.subscription.productId = "basic.monthly"
                try await flow.send(.renew)
                detail = try await flow.detailAnswer()
                #expect(detail.productId == "basic.monthly")
                #expect(detail.pendingProductId == nil)
            }
        }
    }

    @Test("grace period → recovery; billing retry → expiry")
    func failedRenewals() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var graceFlow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await graceFlow.send(.subscribe)
                try await graceFlow.send(.grace)
                let grace = try await graceFlow.statusAnswer()
                #expect(grace.state == "grace_period")
                #expect(grace.entitled == true)
                #expect(grace.subscription?.gracePeriodExpiresAt != nil)
                try await graceFlow.send(.recover)
                #expect(try await graceFlow.statusAnswer().state == "subscribed")

                var retryFlow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await retryFlow.send(.subscribe)
                try await retryFlow.send(.fail)
                let retry = try await retryFlow.statusAnswer()
                #expect(retry.state == "billing_retry")
                #expect(retry.entitled == false)
                try await retryFlow.send(.expire) {
                    $0.subtype = "BILLING_RETRY"
                    $0.renewalInfo?.expirationIntent = 2
                }
                #expect(try await retryFlow.statusAnswer().state == "free_with_credits")
                #expect(try await retryFlow.archive() == ["EXPIRED_BILLING_RETRY"])
            }
        }
    }

    @Test("refund ends access and is archived; its reversal reinstates both")
    func refund() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe)
                try await flow.send(.refund)
                let refunded = try await flow.statusAnswer()
                #expect(refunded.state == "free_with_credits")
                #expect(refunded.subscription?.status == "refunded")
                #expect(try await flow.archive() == ["REFUND"])
                try await flow.send(.refund, LifecycleFlow.reversingTheRefund)
                #expect(try await flow.statusAnswer().state == "subscribed")
                #expect(try await flow.archive() == ["REFUND reinstated"])
            }
        }
    }

    @Test("family sharing revoked: access ends, archived as REVOKE")
    func familyRevoke() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe) { $0.transaction?.inAppOwnershipType = "FAMILY_SHARED" }
                #expect(try await flow.statusAnswer().subscription?.ownership == "FAMILY_SHARED")
                try await flow.send(.refund) {
                    $0.notificationType = "REVOKE"
                    $0.transaction?.revocationType = "FAMILY_REVOKE"
                    $0.transaction?.inAppOwnershipType = "FAMILY_SHARED"
                }
                let status = try await flow.statusAnswer()
                #expect(status.state == "free_with_credits")
                #expect(status.subscription?.status == "revoked")
                #expect(try await flow.archive() == ["REVOKE"])
            }
        }
    }

    @Test("delivered newest first and re-sent: the stored state is the in-order one")
    func outOfOrder() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var inOrder = LifecycleFlow(harness: harness, client: client, account: UUID())
                let subscribe = try await inOrder.send(.subscribe)
                let renew = try await inOrder.send(.renew)
                let cancel = try await inOrder.send(.cancel)
                var expected = try await inOrder.detail()

                let reordered = LifecycleFlow(harness: harness, client: client, account: UUID())
                for event in [cancel, subscribe, renew, subscribe] {
                    var copy = event
                    copy.transaction?.originalTransactionId = reordered.originalTransactionId
                    copy.transaction?.appAccountToken = reordered.subscription.accountId!.uuidString.lowercased()
                    copy.renewalInfo?.originalTransactionId = reordered.originalTransactionId
                    try await reordered.post(copy)
                }
                var actual = try await reordered.detail()
                // The two answers are compared whole, every key the server sends included: read raw on purpose.
                #expect(actual["originalTransactionId"] as? String == reordered.originalTransactionId)
                for key in ["originalTransactionId", "accountId"] {
                    expected[key] = nil
                    actual[key] = nil
                }
                #expect(NSDictionary(dictionary: actual) == NSDictionary(dictionary: expected))
                #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome NOT IN ('applied', 'unchanged')") == 0)
            }
        }
    }
}
