import Application
import Credits
import Entitlements
import Foundation
import Jobs
import Persistence
import Prometheus
import SignedData
import StripeStore

/// Everything the HTTP routes need, grouped by who calls them: the stores' intakes, the app's services (`/v1`), the
/// operators (`/admin`, JSON and dashboard), and what several of them read. A group's optional parts are features:
/// `nil` leaves their routes out (and ``unconfiguredFeatures(_:)`` says what turns them on).
public struct HTTPDependencies: Sendable {
    /// Read by more than one audience.
    public struct Shared: Sendable {
        public var catalogue: TierCatalogue
        public var clock: @Sendable () -> Date
        public var jobs: PostgresJobQueue
        /// Job kinds `GET /metrics` reports even while none is queued.
        public var jobKinds: [String] = []
        public var accounts: AccountStatusQuery
        public var records: AccountRecords
        /// Accounts' refund requests, each one that can still be answered with what Storekeeper would send (the API, the dashboard).
        public var refundRequests: RefundRequestQuery
        /// Where every operator's change is appended (and the dashboard reads it back).
        public var audit: OperatorActions
        /// Stored events: the feed, the admin routes, the dashboard and the metrics; `nil` leaves them out.
        public var events: EventHistory?
        /// Play purchases waiting for their acknowledgement (the dashboard, the metric).
        public var googleAcknowledgements: GoogleAcknowledgements?
        /// Where `GET /metrics` reads from.
        public var metrics: PrometheusCollectorRegistry
        /// Bearer keys `GET /metrics` requires; empty leaves it open (keep it off the public listener then).
        public var metricsKeys: [String] = []
        public var readiness: any ReadinessChecking
        /// The request-body memory of the process.
        public var bodyBudget = RequestBodyBudget(bytes: HTTPServerLimits().bodyMemory)
    }

    /// What the stores call: Apple's notifications and retention requests, Stripe's webhooks, Google's pushes.
    public struct Intake: Sendable {
        public var verifier: SignedDataVerifier
        public var inbox: NotificationInbox
        /// Answers Apple's Get Retention Message requests; `nil` (no `STOREKEEPER_RETENTION`) leaves
        /// `POST /apple/retention-message` (and the dashboard's retention report) out.
        public var retention: RetentionMessaging?
        /// Stripe's webhook intake: its signature check and inbox; `nil` leaves `POST /stripe/webhooks` out.
        public var stripe: (signature: StripeSignature, inbox: StripeInbox)?
        /// Google Play's push intake: its token check and inbox; `nil` leaves `POST /notifications/google` out.
        public var google: (verifier: GooglePushVerifier, inbox: GoogleInbox)?
    }

    /// What the app's services call under `/v1`, with a bearer key of `apiKeys` (none: no `/v1` at all).
    public struct Service: Sendable {
        public var apiKeys: [String]
        public var subscriptions: SubscriptionStore
        public var usage: SpendCredits
        public var claims: SubscriptionClaims
        /// Holds of credits; `nil` leaves the hold routes out.
        public var holds: CreditHolds?
        /// Issues purchase tokens (`POST /v1/accounts/{id}/purchase-intents`); `nil` leaves the route out.
        public var purchaseIntents: PurchaseIntents?
        public var refunds: RefundDefence?
        /// Offer signing; `nil` (no In-App Purchase key) leaves its routes out.
        public var offers: OfferSigning?
        /// Linking Stripe subscriptions to accounts, and the web app's checkout and portal (`nil` when no API key is
        /// set); `nil` linking leaves the `/v1/accounts/{id}/stripe/*` routes out.
        public var stripeAccounts: (linking: StripeSubscriptions, selling: StripeCheckout?)?
        /// Claims of Play purchases; `nil` (no service account: Play cannot be read) leaves
        /// `POST /v1/accounts/{id}/google/purchases` out.
        public var googlePurchases: GooglePlayClaims?
    }

    /// What operators call under `/admin`, with a key of `operators` (none: no `/admin` at all).
    public struct Admin: Sendable {
        /// The operators' keys (`STOREKEEPER_ADMIN_KEYS`).
        public var operators: [OperatorKey]
        /// Operators' grants; `nil` leaves their routes out.
        public var grants: OperatorGrants?
        /// Operators' credit adjustments; `nil` leaves their routes out.
        public var adjustments: CreditAdjustments?
        /// What support asks Apple (order ids, renewal extensions, refund history); `nil` leaves their routes out.
        public var appStore: AppStoreSupport?
        /// The support console's search; `nil` leaves `/admin/search` and the dashboard's search out.
        public var search: AccountSearch?
        /// Exports what is held about an account; `nil` leaves `/admin/accounts/{id}/export` out.
        public var exporter: AccountExport?
        /// Erases accounts' personal data; `nil` leaves `/admin/accounts/{id}/erase` out.
        public var erasure: AccountErasure?
        /// Analytics charts; `nil` leaves `/admin/analytics/…` and the overview out.
        public var analytics: AnalyticsCharts?
        /// The environment charts show when none is asked for.
        public var analyticsEnvironment = StoreEnvironment.Rollup.production
        /// `storekeeper dev`'s clock, which `simulate advance` moves through the admin API; `nil` elsewhere.
        public var devClock: (any AdjustableClock)?
        /// What `dev` does when its clock moves on: its waiting jobs come forward as far, the offset is kept.
        public var devClockAdvanced: @Sendable (TimeInterval) async throws -> Void = { _ in }
    }

    public var shared: Shared
    public var intake: Intake
    public var service: Service
    public var admin: Admin

    /// What every configuration has; the features are set on the groups afterwards.
    public init(
        verifier: SignedDataVerifier, inbox: NotificationInbox, subscriptions: SubscriptionStore,
        accounts: AccountStatusQuery, records: AccountRecords, refundRequests: RefundRequestQuery, usage: SpendCredits, claims: SubscriptionClaims,
        catalogue: TierCatalogue, metrics: PrometheusCollectorRegistry, readiness: any ReadinessChecking, jobs: PostgresJobQueue,
        apiKeys: [String], operators: [OperatorKey],
        audit: OperatorActions, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        shared = Shared(
            catalogue: catalogue, clock: clock, jobs: jobs, accounts: accounts, records: records, refundRequests: refundRequests, audit: audit,
            metrics: metrics,
            readiness: readiness)
        intake = Intake(verifier: verifier, inbox: inbox)
        service = Service(apiKeys: apiKeys, subscriptions: subscriptions, usage: usage, claims: claims)
        admin = Admin(operators: operators)
    }
}
