import AppStoreModels
import AppStoreServerAPI
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Jobs
import LocalSigning
import Logging
import Testing

@testable import IntegrationSupport

@Suite("App Store Server API against a local fake Apple")
struct ServerAPITests {
    static func subscription(_ otid: String, transaction tid: String, product: String = "pro.monthly", start: Date, end: Date, account: UUID?) -> (
        TransactionPayload, RenewalInfoPayload
    ) {
        var transaction = TransactionPayload(
            transactionId: tid, originalTransactionId: otid, productId: product, bundleId: StorekeeperHarness.bundleId,
            environment: .sandbox, signedDate: nil)
        transaction.type = "Auto-Renewable Subscription"
        transaction.purchaseDate = Int64(start.timeIntervalSince1970 * 1000)
        transaction.expiresDate = Int64(end.timeIntervalSince1970 * 1000)
        transaction.appAccountToken = account?.uuidString.lowercased()
        var renewal = RenewalInfoPayload(originalTransactionId: otid, productId: product, environment: .sandbox, signedDate: nil)
        renewal.autoRenewStatus = 1
        renewal.autoRenewProductId = product
        return (transaction, renewal)
    }

    @Test("the client: Apple accepts its tokens; 429 and retryable codes are retried, terminal ones not; signed answers are verified")
    func client() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(worker: false) { harness in
                let (transaction, renewal) = Self.subscription(
                    "3000000001", transaction: "3000000001", start: Date(), end: Date().addingTimeInterval(86_400), account: nil)
                apple.server.state.withLock { $0.subscriptions["3000000001"] = .init(status: 1, transaction: transaction, renewalInfo: renewal) }
                let credentials = AppStoreServerCredentials(
                    issuerId: "issuer-1", keyId: "KEY123", privateKey: apple.privateKey, bundleId: StorekeeperHarness.bundleId)
                let client = AppStoreServerClient(
                    credentials: credentials, baseURL: apple.url, verifier: harness.components.verifier,
                    retryDelays: [.milliseconds(10), .milliseconds(10), .milliseconds(10)], logger: TestDatabase.logger)

                apple.server.state.withLock {
                    $0.failures = [.init(httpStatus: 429, errorCode: 4_290_000), .init(httpStatus: 500, errorCode: 5_000_001)]
                }
                let items = try await client.subscriptionStatuses(transactionId: "3000000001", environment: .sandbox)
                #expect(items.map(\.status) == [1])
                #expect(items.first?.transaction.productId == "pro.monthly")
                #expect(items.first?.renewalInfo?.autoRenewStatus == 1)
                #expect(apple.server.requests.count == 3)

                let terminal = await #expect(throws: AppStoreServerError.self) {
                    _ = try await client.subscriptionStatuses(transactionId: "404", environment: .sandbox)
                }
                #expect(terminal?.apiCode == 4_040_005)
                #expect(terminal?.isRetryable == false)
                #expect(apple.server.requests.count == 4)

                let stranger = AppStoreServerClient(
                    credentials: .init(
                        issuerId: "issuer-1", keyId: "KEY123", privateKey: P256.Signing.PrivateKey(), bundleId: StorekeeperHarness.bundleId),
                    baseURL: apple.url, verifier: harness.components.verifier, retryDelays: [], logger: TestDatabase.logger)
                let refused = await #expect(throws: AppStoreServerError.self) {
                    _ = try await stranger.subscriptionStatuses(transactionId: "3000000001", environment: .sandbox)
                }
                #expect(refused?.httpStatus == 401)
                #expect(apple.server.unauthorized == 1)

                // The same answer, verified by a verifier that does not trust the fake's chain, is refused.
                let distrustful = AppStoreServerClient(
                    credentials: credentials, baseURL: apple.url,
                    verifier: .init(rootCertificates: [harness.chain.root], policy: harness.components.configuration.verificationPolicy),
                    retryDelays: [], logger: TestDatabase.logger)
                let unverified = await #expect(throws: AppStoreServerError.self) {
                    _ = try await distrustful.subscriptionStatuses(transactionId: "3000000001", environment: .sandbox)
                }
                #expect(unverified?.kind == .invalidResponse)

                // Transaction info, transaction history (paged by revision), Set App Account Token.
                var earlier = transaction
                earlier.transactionId = "2999999999"
                var older = transaction
                older.transactionId = "2999999998"
                apple.server.state.withLock { $0.extraTransactions = [earlier, older] }
                #expect(try await client.transactionInfo(transactionId: "2999999999", environment: .sandbox).transactionId == "2999999999")
                let first = try await client.transactionHistory(transactionId: "3000000001", revision: nil, environment: .sandbox)
                #expect(first.transactions.count == 2 && first.hasMore)
                let second = try await client.transactionHistory(transactionId: "3000000001", revision: first.revision, environment: .sandbox)
                #expect(second.transactions.count == 1 && !second.hasMore)
                let account = UUID()
                try await client.setAppAccountToken(account, originalTransactionId: "3000000001", environment: .sandbox)
                #expect(
                    apple.server.state.withLock { $0.subscriptions["3000000001"]?.transaction.appAccountToken } == account.uuidString.lowercased())
                let missing = await #expect(throws: AppStoreServerError.self) {
                    _ = try await client.transactionInfo(transactionId: "1", environment: .sandbox)
                }
                #expect(missing?.apiCode == 4_040_010)
            }
        }
    }

    @Test("a renewal only the recheck discovers; billing retry is looked at again later")
    func lateRenewal() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_RENEWAL_RECHECK_DELAY": "0"]) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let periodEnd = Date().addingTimeInterval(-120)
                    let otid = flow.originalTransactionId
                    let (renewed, renewal) = Self.subscription(
                        otid, transaction: "\(otid)9", start: periodEnd, end: periodEnd.addingTimeInterval(30 * 86_400), account: account)
                    apple.server.state.withLock { $0.subscriptions[otid] = .init(status: 1, transaction: renewed, renewalInfo: renewal) }
                    let purchase = try await flow.send(.subscribe) {
                        $0.transaction?.purchaseDate = Int64(periodEnd.addingTimeInterval(-30 * 86_400).timeIntervalSince1970 * 1000)
                        $0.transaction?.expiresDate = Int64(periodEnd.timeIntervalSince1970 * 1000)
                    }
                    let oldTransaction = purchase.transaction!.transactionId

                    try await eventually("the recheck to find the renewal") {
                        try await flow.detailAnswer().expiresAt == periodEnd.addingTimeInterval(30 * 86_400).formatted(.iso8601)
                    }
                    #expect(try await flow.statusAnswer().state == "subscribed")
                    #expect(try await flow.detailAnswer().lastEventType == "SERVER_API_STATUS")
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM renewal_rechecks WHERE transaction_id = '\(oldTransaction)' AND resolved_at IS NOT NULL AND checks = 1"
                        ) == 1)
                    #expect(
                        try await harness.count("SELECT count(*) FROM renewal_rechecks WHERE transaction_id = '\(otid)9' AND resolved_at IS NULL")
                            == 1)
                    #expect(try await harness.count("SELECT count(*) FROM subscription_events WHERE source = 'server_api'") == 1)

                    // Another subscription in billing retry: applied, and the same job is due again later.
                    var retrying = LifecycleFlow(harness: harness, client: client, account: UUID())
                    let (same, retryRenewal) = Self.subscription(
                        retrying.originalTransactionId, transaction: "x", start: periodEnd.addingTimeInterval(-30 * 86_400), end: periodEnd,
                        account: nil)
                    var stillOwed = same
                    stillOwed.transactionId = retrying.originalTransactionId + "1"
                    var retryInfo = retryRenewal
                    retryInfo.isInBillingRetryPeriod = true
                    apple.server.state.withLock {
                        $0.subscriptions[retrying.originalTransactionId] = .init(status: 3, transaction: stillOwed, renewalInfo: retryInfo)
                    }
                    try await retrying.send(.subscribe) {
                        $0.transaction?.transactionId = stillOwed.transactionId
                        $0.transaction?.purchaseDate = Int64(periodEnd.addingTimeInterval(-30 * 86_400).timeIntervalSince1970 * 1000)
                        $0.transaction?.expiresDate = Int64(periodEnd.timeIntervalSince1970 * 1000)
                    }
                    try await eventually("the billing-retry recheck to be applied") {
                        try await retrying.statusAnswer().state == "billing_retry"
                    }
                    try await eventually("the recheck to be snoozed for later") {
                        try await harness.count(
                            "SELECT count(*) FROM jobs WHERE unique_key = 'renewal-recheck:\(retrying.originalTransactionId):\(stillOwed.transactionId)' AND state = 'available' AND run_at BETWEEN now() + interval '50 minutes' AND now() + interval '70 minutes'"
                        ) == 1
                    }
                    #expect(
                        try await harness.count("SELECT count(*) FROM renewal_rechecks WHERE last_status = 3 AND resolved_at IS NULL AND checks = 1")
                            == 1)
                }
            }
        }
    }

    @Test("a notification only the backfill recovers; the catch-up job reads from its checkpoint; test notifications")
    func backfill() async throws {
        try await FakeApple.run { apple in
            try await apple.harness { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    let delivered = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
                    let deliveredUUID = UUID()
                    let flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.post(delivered, notificationUUID: deliveredUUID)
                    let missed = SimulatedEvent.scenario(.subscribe, subscription: flow.subscription, at: Date())
                    var otherSubscription = harness.subscription(account: UUID())
                    otherSubscription.bundleId = "com.someone.else"
                    let otherApp = NotificationSigner(signer: harness.signer.signer, bundleId: "com.someone.else")
                    apple.server.state.withLock {
                        $0.history = [
                            try! harness.signer.signedPayload(for: delivered, notificationUUID: deliveredUUID),
                            try! harness.signer.signedPayload(for: missed),
                            try! otherApp.signedPayload(for: SimulatedEvent.scenario(.subscribe, subscription: otherSubscription, at: Date())),
                        ]
                    }
                    var environment = harness.processEnvironment
                    environment.merge(apple.environment) { _, new in new }
                    let since = Date().addingTimeInterval(-86_400).formatted(.iso8601)
                    let (status, output) = try await TestProcess.run(
                        "storekeeper", ["backfill", "--since", since, "--only-failures"], environment: environment)
                    #expect(status == 0, "\(output)")
                    #expect(
                        output.contains(
                            "Sandbox: 3 notifications in 2 pages — 1 enqueued, 1 already stored, 1 for another app or environment, 0 failed verification"
                        ), "\(output)")
                    try await eventually("the recovered notification to be applied") {
                        try await flow.statusAnswer().state == "subscribed"
                    }
                    let (_, again) = try await TestProcess.run("storekeeper", ["backfill", "--since", since], environment: environment)
                    #expect(again.contains("0 enqueued, 2 already stored"), "\(again)")

                    // The periodic catch-up: first run reads the last day and stores its checkpoint.
                    apple.server.state.withLock {
                        $0.history.append(
                            try! harness.signer.signedPayload(
                                for: SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())))
                    }
                    _ = try await harness.client.withConnection { connection in
                        try await harness.components.queue.enqueue(
                            try NewJob(kind: "notification-catch-up", arguments: [String: String]()), on: connection)
                    }
                    // The worker's own schedule may have run a catch-up at its start already (with a checkpoint of its
                    // own), so wait for what this one must do: store the new notification, then advance the checkpoint.
                    try await eventually("the catch-up to store the new notification and its checkpoint") {
                        let stored = try await harness.count("SELECT count(*) FROM notifications")
                        let checkpoints = try await harness.count(
                            "SELECT count(*) FROM notification_history_checkpoints WHERE environment = 'Sandbox'")
                        return stored == 3 && checkpoints == 1
                    }

                    let (testStatus, testOutput) = try await TestProcess.run(
                        "storekeeper", ["apple", "test-notification", "--interval", "0.1"], environment: environment)
                    #expect(testStatus == 0, "\(testOutput)")
                    #expect(testOutput.contains("delivered: "), "\(testOutput)")

                    var unconfigured = harness.processEnvironment
                    for name in ["STOREKEEPER_ASSA_ISSUER_ID", "STOREKEEPER_ASSA_KEY_ID", "STOREKEEPER_ASSA_PRIVATE_KEY"] { unconfigured[name] = "" }
                    let (offStatus, offOutput) = try await TestProcess.run("storekeeper", ["backfill", "--since", since], environment: unconfigured)
                    #expect(offStatus == 1)
                    #expect(
                        offOutput.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix(
                            "storekeeper: App Store Server API access is not configured"), "\(offOutput)")
                }
            }
        }
    }
}
