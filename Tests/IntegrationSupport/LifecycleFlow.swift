import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

/// Drives one subscription through Apple-signed notifications over HTTP and waits for each to be applied, for the
/// end-to-end lifecycle tests.
struct LifecycleFlow {
    let harness: StorekeeperHarness
    let client: any TestClientProtocol
    var subscription: SimulatedEvent.Subscription
    /// The period Storekeeper should now hold.
    var period: DateInterval?
    /// When the last event was signed: events are a minute apart, starting an hour ago, so every one is in the past
    /// of the real clock (and of snapshots Apple signs now).
    var clock = Date().addingTimeInterval(-3600)

    init(harness: StorekeeperHarness, client: any TestClientProtocol, account: UUID?, ownership: String = "PURCHASED") {
        self.harness = harness
        self.client = client
        self.subscription = harness.subscription(account: account)
    }

    var originalTransactionId: String { subscription.originalTransactionId }

    /// Signs and POSTs a scenario one minute after the previous one, then waits until a worker applied it.
    @discardableResult
    mutating func send(
        _ scenario: SimulatedEvent.Scenario, target: String? = nil, _ adjust: (inout SimulatedEvent) -> Void = { _ in }
    ) async throws -> SimulatedEvent {
        clock = clock.addingTimeInterval(60)
        var event = SimulatedEvent.scenario(scenario, subscription: subscription, currentPeriod: period, target: target, at: clock)
        adjust(&event)
        try await post(event)
        if let transaction = event.transaction, let start = transaction.purchaseDate, let end = transaction.expiresDate {
            period = DateInterval(start: Self.date(min(start, end)), end: Self.date(end))
            subscription.productId = transaction.productId
        }
        return event
    }

    /// Sends Apple's REFUND_REVERSED of an earlier `refund` — of a period that may no longer be in force (an upgrade
    /// came between) — one minute after the previous event, and waits until it is applied: the refunded transaction
    /// without its revocation and `renewalInfo`, the subscription's as it is now, both signed anew at the
    /// notification's date, as Apple signs every JWS it sends. (A copy signed at the refund's date would tie with the
    /// refund's own transaction.)
    mutating func sendReversal(
        of refund: SimulatedEvent, renewalInfo: RenewalInfoPayload?, _ adjust: (inout SimulatedEvent) -> Void = { _ in }
    ) async throws {
        clock = clock.addingTimeInterval(60)
        var event = refund
        event.renewalInfo = renewalInfo ?? refund.renewalInfo
        Self.reversingTheRefund(&event)
        adjust(&event)
        let signed = Int64((clock.timeIntervalSince1970 * 1000).rounded())
        event.signedDate = signed
        event.transaction?.signedDate = signed
        event.renewalInfo?.signedDate = signed
        try await post(event)
    }

    /// Sends Apple's REFUND of an earlier period (`earlier`, its transaction as first sent) while the subscription goes
    /// on (an upgrade came between): the transaction with its revocation and `renewalInfo`, the subscription's as it is
    /// now, signed anew one minute after the previous event; waits until it is applied and returns it, for
    /// ``sendReversal(of:renewalInfo:)``.
    @discardableResult
    mutating func sendRefund(
        of earlier: SimulatedEvent, renewalInfo: RenewalInfoPayload?, _ adjust: (inout SimulatedEvent) -> Void = { _ in }
    ) async throws -> SimulatedEvent {
        clock = clock.addingTimeInterval(60)
        let signed = Int64((clock.timeIntervalSince1970 * 1000).rounded())
        var event = earlier
        event.notificationType = "REFUND"
        event.subtype = nil
        event.status = 1
        event.transaction?.revocationDate = signed
        event.transaction?.revocationReason = 0
        event.transaction?.revocationType = "REFUND_FULL"
        event.renewalInfo = renewalInfo ?? earlier.renewalInfo
        event.signedDate = signed
        event.transaction?.signedDate = signed
        event.renewalInfo?.signedDate = signed
        adjust(&event)
        try await post(event)
        return event
    }

    /// POSTs a signed event and waits until it is applied.
    func post(_ event: SimulatedEvent, notificationUUID: UUID = UUID()) async throws {
        let response = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: notificationUUID))
        #expect(response.status == .ok)
        #expect(response.json["status"] as? String == "accepted")
        try await eventually("\(event.notificationType) to be applied") {
            try await harness.count(
                "SELECT count(*) FROM notifications WHERE notification_uuid = '\(notificationUUID)' AND applied_at IS NOT NULL") == 1
        }
    }

    func status() async throws -> [String: Any] {
        try await client.getWithKey("/v1/accounts/\(subscription.accountId!)/status").json
    }

    func detail() async throws -> [String: Any] {
        try await client.getWithKey("/v1/subscriptions/\(originalTransactionId)").json
    }

    func archive() async throws -> [String] {
        let rows = try await harness.client.query(
            "SELECT reason || CASE WHEN reinstated_at IS NULL THEN '' ELSE ' reinstated' END FROM subscription_archive WHERE original_transaction_id = \(originalTransactionId) ORDER BY archived_at, reason",
            logger: TestDatabase.logger)
        var reasons: [String] = []
        for try await reason in rows.decode(String.self) { reasons.append(reason) }
        return reasons
    }

    /// Turns the `refund` scenario into Apple's REFUND_REVERSED of the same period.
    static func reversingTheRefund(_ event: inout SimulatedEvent) {
        event.notificationType = "REFUND_REVERSED"
        event.status = 1
        event.transaction?.revocationDate = nil
        event.transaction?.revocationType = nil
        event.transaction?.revocationReason = nil
        event.renewalInfo?.autoRenewStatus = 1
    }

    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
