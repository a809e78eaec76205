import AppStoreModels
import Credits
import Crypto
import Entitlements
import Events
import Foundation
import GooglePlay
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Play's refunds and chargebacks. A voided order — from a `voidedPurchaseNotification` or the hourly
/// `voidedpurchases.list` catch-up (``GoogleVoidedPurchasesJob``) — is recorded once and its purchase derived again:
/// a subscription's period loses what it gave, a top-up its credits (a share of them for a partial refund), a lifetime
/// unlock or a pass ends. A `pendingRefundReviewNotification` opens a refund request, answered by
/// ``ConsumptionAnswerJob`` through `orders.reviewrefund` within Google's 24 hours, by the same policy, consent and
/// app's own answer as Apple's consumption requests.
public struct GoogleRefunds: Sendable {
    /// Google's window to answer a review.
    public static let reviewDeadline: TimeInterval = 24 * 3600

    private let client: PostgresClient
    private let play: GooglePlayClient?
    private let store: GoogleProductStore
    private let reads: GoogleSubscriptionStore
    private let products: GooglePlayProducts
    private let subscriptions: GooglePlaySubscriptions
    private let filed: SubscriptionStore
    private let purchases: OneTimePurchases
    private let credits: CreditLedger
    private let requests: RefundRequests
    private let policy: RefundPolicy
    private let queue: any JobScheduling
    private let events: EventRecorder?
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, products: GooglePlayProducts, subscriptions: GooglePlaySubscriptions, purchases: OneTimePurchases,
        credits: CreditLedger, policy: RefundPolicy, queue: any JobScheduling, events: EventRecorder?, clock: @escaping @Sendable () -> Date,
        logger: Logger
    ) {
        self.client = client
        self.play = products.play
        self.store = GoogleProductStore(logger: logger)
        self.reads = GoogleSubscriptionStore(logger: logger)
        self.products = products
        self.subscriptions = subscriptions
        self.filed = SubscriptionStore(client: client, logger: logger)
        self.purchases = purchases
        self.credits = credits
        self.requests = RefundRequests(logger: logger)
        self.policy = policy
        self.queue = queue
        self.events = events
        self.clock = clock
        self.logger = logger
    }

    /// Records a voided order and derives its purchase again, in the caller's transaction. `productType` is the
    /// notification's (1 subscription, 2 one-time); the list does not say, so a held product read decides. False when
    /// the refund was recorded already.
    @discardableResult
    public func recordVoided(
        _ voided: VoidedPurchase, productType: Int?, seenVia: String, cause: EventCause, on connection: PostgresConnection
    ) async throws -> Bool {
        guard try await store.recordVoided(voided, seenVia: seenVia, on: connection) else { return false }
        try await requests.recordOutcome(transactionId: voided.orderId, outcome: "REFUND", at: voided.voidedAt, on: connection)
        let isProduct: Bool
        if let productType { isProduct = productType == 2 } else { isProduct = try await products.holds(voided.purchaseToken, on: connection) }
        if isProduct {
            try await products.derive(voided.purchaseToken, cause: cause, on: connection)
        } else {
            try await subscriptions.derive(chainOf: voided.purchaseToken, cause: cause, on: connection)
        }
        return true
    }

    /// What a catch-up found.
    public struct CatchUpReport: Sendable, Equatable {
        public var listed = 0
        public var recorded = 0

        public init(listed: Int = 0, recorded: Int = 0) {
            self.listed = listed
            self.recorded = recorded
        }
    }

    /// Reads every refund of the last 30 days (`voidedpurchases.list`, paged) and records what is new.
    public func catchUp() async throws -> CatchUpReport {
        guard let play else { return CatchUpReport() }
        // Google keeps 30 days; a minute less, so the start is never refused for being too old.
        let start = clock().addingTimeInterval(-30 * 86_400 + 60)
        var report = CatchUpReport()
        var pageToken: String?
        repeat {
            let page = try await play.voidedPurchases(since: start, pageToken: pageToken)
            report.listed += page.voidedPurchases.count
            if page.skipped > 0 {
                logger.warning("voidedpurchases.list entries could not be read", metadata: ["google.voided.skipped": "\(page.skipped)"])
            }
            for voided in page.voidedPurchases {
                let cause = EventCause(
                    eventId: "voided:\(voided.orderId)", notificationType: "google_play.voided_purchases",
                    originalTransactionId: voided.purchaseToken, signedDate: voided.voidedAt)
                if try await client.withFencedTransaction(
                    logger: logger, { try await recordVoided(voided, productType: nil, seenVia: "list", cause: cause, on: $0) })
                {
                    report.recorded += 1
                    await readAgain(voided.purchaseToken, using: play, cause: cause)
                }
            }
            pageToken = page.nextPageToken
        } while pageToken != nil
        return report
    }

    /// Reads a purchase whose refund the list found again, as the voided notification's job does: access follows the
    /// read (a subscription Play revoked reads expired; a one-time purchase says what is still refundable). A read
    /// that fails is logged: the refund is recorded, and Play's next notification or read of the token brings the rest.
    private func readAgain(_ token: String, using play: GooglePlayClient, cause: EventCause) async {
        do {
            if try await client.withFencedConnection({ try await products.holds(token, on: $0) }) {
                _ = try await products.refresh(token, using: play, cause: cause)
            } else {
                _ = try await subscriptions.refresh(token, using: play, cause: cause)
            }
        } catch {
            logger.warning(
                "a refunded purchase could not be read again", metadata: ["google.token": "\(token)", "error": "\(String(reflecting: error))"])
        }
    }

    /// Opens the refund request of a `pendingRefundReviewNotification`, in the caller's transaction: the order's
    /// purchase and account, the answer's time, the event telling the app. False when the order is not one
    /// Storekeeper holds for an account (nothing can be said about it) or the request is open already.
    @discardableResult
    public func openReview(
        reviewToken: String, orderId: String, refundReason: Int?, messageId: String, requestedAt: Date, on connection: PostgresConnection
    ) async throws -> Bool {
        guard let purchase = try await purchase(ofOrder: orderId, on: connection) else {
            logger.warning("Play asked to review a refund of an order Storekeeper does not hold", metadata: ["google.order": "\(orderId)"])
            return false
        }
        let id = Self.requestId(reviewToken: reviewToken)
        let request = {
            var request = RefundRequests.Request(
                id: id, accountId: purchase.account, transactionId: orderId, originalTransactionId: purchase.holder, productId: purchase.productId,
                billingPeriod: orderId, purchase: purchase.subscription ? .subscription : .consumable, environment: purchase.environment,
                reason: refundReason.map { $0 == 7 ? "CHARGEBACK" : String($0) }, requestedAt: requestedAt,
                answerAt: policy.answerAt(requestedAt: requestedAt), deadlineAt: requestedAt.addingTimeInterval(Self.reviewDeadline),
                state: play == nil ? .notConfigured : .pending)
            request.store = .googlePlay
            request.reviewToken = reviewToken
            return request
        }()
        guard try await requests.open(request, on: connection) else { return false }
        if play != nil {
            try await queue.enqueue(
                try NewJob(
                    kind: RefundDefence.jobKind, arguments: RefundDefence.Arguments(requestId: id), runAt: request.answerAt,
                    uniqueKey: "consumption-answer:\(id.lowercasedText)"),
                on: connection)
        }
        try await events?.record(
            [
                CreditChanges.refundRequested(
                    requestId: id, transactionId: orderId, productId: purchase.productId, reason: request.reason, account: purchase.account,
                    subscription: purchase.subscription ? purchase.holder : nil, environment: purchase.environment, answerBy: request.answerAt,
                    deadline: request.deadlineAt,
                    cause: EventCause(
                        eventId: messageId, notificationType: "google_play.pending_refund_review", originalTransactionId: purchase.holder,
                        signedDate: requestedAt))
            ], now: clock(), on: connection)
        logger.info(
            "Play refund review opened",
            metadata: ["refund.request": "\(id)", "google.order": "\(orderId)", "account.id": "\(purchase.account.text)"])
        return true
    }

    /// A review's request id: the same for every notification of one review (its token), however often it is sent.
    static func requestId(reviewToken: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Data("google-refund-review:\(reviewToken)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11], bytes[12],
                bytes[13], bytes[14], bytes[15]
            ))
    }

    /// What an order paid for, as Storekeeper holds it.
    struct OrderPurchase {
        var account: AccountID
        /// The subscription's id, or the one-time purchase's.
        var holder: String
        var productId: String
        var environment: StoreEnvironment
        var subscription: Bool
    }

    private func purchase(ofOrder orderId: String, on connection: PostgresConnection) async throws -> OrderPurchase? {
        if let token = try await store.token(ofOrder: orderId, on: connection), let held = try await store.reads(token, on: connection),
            let purchase = PlayProductPurchase(held.newest, purchased: held.purchased, voided: [])
        {
            var owner = try await credits.creditedAccount(ofTopUp: purchase.id, on: connection)
            if owner == nil { owner = try await purchases.owner(of: purchase.id, on: connection) }
            return owner.map {
                OrderPurchase(
                    account: $0, holder: purchase.id, productId: purchase.productId, environment: purchase.isTest ? .sandbox : .production,
                    subscription: false)
            }
        }
        guard let token = try await reads.token(ofOrder: orderId, on: connection) else { return nil }
        let chain = try await reads.chain(of: token, on: connection)
        for id in try await filed.filed(of: .googlePlay, among: chain, on: connection) {
            if let state = try await filed.lockedSubscription(id, on: connection), let account = state.accountId {
                return OrderPurchase(
                    account: account, holder: id, productId: state.productId, environment: state.environment, subscription: true)
            }
        }
        return nil
    }
}
