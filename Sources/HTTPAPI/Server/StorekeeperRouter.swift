import Application
import Credits
import Foundation
import Hummingbird
import Jobs
import Persistence
import Prometheus
import SignedData
import StripeStore

/// Everything the HTTP routes need.
public struct HTTPDependencies: Sendable {
    public var verifier: SignedDataVerifier
    public var inbox: NotificationInbox
    public var subscriptions: SubscriptionStore
    public var accounts: AccountStatusQuery
    public var records: AccountRecords
    public var usage: SpendCredits
    /// Holds of credits; `nil` leaves the hold routes out.
    public var holds: CreditHolds?
    public var claims: SubscriptionClaims
    /// Issues purchase tokens (`POST /v1/accounts/{id}/purchase-intents`); `nil` leaves the route out.
    public var purchaseIntents: PurchaseIntents?
    /// Stored events: the feed, the admin routes and the dashboard's failed deliveries; `nil` leaves them out.
    public var events: EventHistory?
    public var refunds: RefundDefence?
    /// Answers Apple's Get Retention Message requests; `nil` (no `STOREKEEPER_RETENTION`) leaves
    /// `POST /apple/retention-message` out.
    public var retention: RetentionMessaging?
    /// Stripe's webhook intake: its signature check and inbox; `nil` leaves `POST /stripe/webhooks` out.
    public var stripe: (signature: StripeSignature, inbox: StripeInbox)?
    /// Google Play's push intake: its token check and inbox; `nil` leaves `POST /notifications/google` out.
    public var google: (verifier: GooglePushVerifier, inbox: GoogleInbox)?
    /// Linking Stripe subscriptions to accounts, and the web app's checkout and portal (`nil` when no API key is set);
    /// `nil` linking leaves the `/v1/accounts/{id}/stripe/*` routes out.
    public var stripeAccounts: (linking: StripeSubscriptions, selling: StripeCheckout?)?
    /// Claims of Play purchases; `nil` (no service account: Play cannot be read) leaves
    /// `POST /v1/accounts/{id}/google/purchases` out.
    public var googlePurchases: GooglePlayClaims?
    /// Play purchases waiting for their acknowledgement (the dashboard, the metric).
    public var googleAcknowledgements: GoogleAcknowledgements?
    /// Operators' grants; `nil` leaves their routes out.
    public var grants: OperatorGrants?
    /// Offer signing; `nil` (no In-App Purchase key) leaves its routes out.
    public var offers: OfferSigning?
    public var catalogue: TierCatalogue
    /// Where `GET /metrics` reads from.
    public var metrics: PrometheusCollectorRegistry
    /// Job kinds `GET /metrics` reports even while none is queued.
    public var jobKinds: [String] = []
    public var readiness: any ReadinessChecking
    public var jobs: PostgresJobQueue
    /// Bearer keys of the service API; empty disables it.
    public var apiKeys: [String]
    /// The operators' keys of the admin API and dashboard (`STOREKEEPER_ADMIN_KEYS`); none disables both.
    public var operators: [OperatorKey]
    /// Where every operator's change is appended.
    public var audit: OperatorActions
    /// Analytics charts; `nil` leaves `/admin/analytics/…` and the overview out.
    public var analytics: AnalyticsCharts?
    /// Operators' credit adjustments; `nil` leaves their routes out.
    public var adjustments: CreditAdjustments?
    /// Exports what is held about an account; `nil` leaves `/admin/accounts/{id}/export` out.
    public var exporter: AccountExport?
    /// The support console's search; `nil` leaves `/admin/search` and the dashboard's search out.
    public var search: AccountSearch?
    /// What support asks Apple (order ids, renewal extensions, refund history); `nil` leaves their routes out.
    public var appStore: AppStoreSupport?
    /// Erases accounts' personal data; `nil` leaves `/admin/accounts/{id}/erase` out.
    public var erasure: AccountErasure?
    /// The environment charts show when none is asked for.
    public var analyticsEnvironment = "production"
    /// Bearer keys `GET /metrics` requires; empty leaves it open (keep it off the public listener then).
    public var metricsKeys: [String] = []
    /// `storekeeper dev`'s clock, which `simulate advance` moves through the admin API; `nil` elsewhere.
    public var devClock: (any AdjustableClock)?
    /// What `dev` does when its clock moves on: its waiting jobs come forward as far.
    public var devClockAdvanced: @Sendable (TimeInterval) async throws -> Void = { _ in }
    /// The request-body memory of the process.
    public var bodyBudget = RequestBodyBudget(bytes: HTTPServerLimits().bodyMemory)
    public var clock: @Sendable () -> Date

    public init(
        verifier: SignedDataVerifier, inbox: NotificationInbox, subscriptions: SubscriptionStore,
        accounts: AccountStatusQuery, records: AccountRecords, usage: SpendCredits, claims: SubscriptionClaims,
        catalogue: TierCatalogue, metrics: PrometheusCollectorRegistry, readiness: any ReadinessChecking, jobs: PostgresJobQueue,
        apiKeys: [String], operators: [OperatorKey],
        audit: OperatorActions, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.verifier = verifier
        self.inbox = inbox
        self.subscriptions = subscriptions
        self.accounts = accounts
        self.records = records
        self.usage = usage
        self.claims = claims
        self.catalogue = catalogue
        self.metrics = metrics
        self.readiness = readiness
        self.jobs = jobs
        self.apiKeys = apiKeys
        self.operators = operators
        self.audit = audit
        self.clock = clock
    }
}

/// Builds the router of `storekeeper serve`.
public func buildRouter(_ dependencies: HTTPDependencies) -> Router<StorekeeperRequestContext> {
    // HEAD answers every GET route with its headers and no body, as HTTP asks of a general-purpose server.
    let router = Router(context: StorekeeperRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: RequestBodyBudgetMiddleware(budget: dependencies.bodyBudget))
    MetricsController(
        registry: dependencies.metrics, jobs: dependencies.jobs, kinds: dependencies.jobKinds,
        deliveries: dependencies.events, acknowledgements: dependencies.googleAcknowledgements
    ).addRoutes(to: router, keys: dependencies.metricsKeys)
    HealthController(readiness: dependencies.readiness).addRoutes(to: router)
    NotificationIntakeController(verifier: dependencies.verifier, inbox: dependencies.inbox).addRoutes(to: router)
    if let retention = dependencies.retention {
        RetentionMessageController(verifier: dependencies.verifier, retention: retention, clock: dependencies.clock).addRoutes(to: router)
    }
    if let stripe = dependencies.stripe {
        StripeWebhookController(signature: stripe.signature, inbox: stripe.inbox, clock: dependencies.clock).addRoutes(to: router)
    }
    if let google = dependencies.google {
        // Google signs a push's token by the wall clock, so it is checked by the wall clock: the dev clock (or a test's)
        // moves Storekeeper's rules, not Google's times.
        GoogleNotificationController(verifier: google.verifier, inbox: google.inbox, clock: { Date() }).addRoutes(to: router)
    }
    TiersController(catalogue: dependencies.catalogue).addRoutes(to: router)
    if !dependencies.apiKeys.isEmpty {
        let serviceAPI = router.group("v1")
            .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
            .add(middleware: BearerKeyMiddleware(keys: dependencies.apiKeys))
        let accounts = AccountsController(
            accounts: dependencies.accounts, subscriptions: dependencies.subscriptions, purchaseIntents: dependencies.purchaseIntents,
            clock: dependencies.clock)
        accounts.addRoutes(to: serviceAPI)
        UsageController(usage: dependencies.usage, catalogue: dependencies.catalogue, clock: dependencies.clock)
            .addRoutes(to: serviceAPI)
        if let holds = dependencies.holds {
            HoldsController(holds: holds, catalogue: dependencies.catalogue, clock: dependencies.clock).addRoutes(to: serviceAPI)
        }
        TransactionsController(verifier: dependencies.verifier, claims: dependencies.claims, accounts: accounts)
            .addRoutes(to: serviceAPI)
        if let events = dependencies.events { EventsController(events: events).addFeedRoute(to: serviceAPI) }
        if let offers = dependencies.offers { OffersController(offers: offers, clock: dependencies.clock).addRoutes(to: serviceAPI) }
        if let stripe = dependencies.stripeAccounts {
            StripeAccountsController(linking: stripe.linking, selling: stripe.selling, clock: dependencies.clock).addRoutes(to: serviceAPI)
        }
        if dependencies.google != nil, let claims = dependencies.googlePurchases {
            GooglePlayAccountsController(claims: claims, accounts: accounts).addRoutes(to: serviceAPI)
        }
        if let refunds = dependencies.refunds {
            RefundsController(refunds: refunds, records: dependencies.records, clock: dependencies.clock).addRoutes(to: serviceAPI)
        }
    }
    if !dependencies.operators.isEmpty {
        // The JSON API takes bearer keys only: a browser's remembered Basic credentials never reach it.
        let adminAPI = router.group("admin")
            .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
            .add(middleware: OperatorMiddleware(operators: dependencies.operators, audit: dependencies.audit, clock: dependencies.clock))
            .add(middleware: SameSiteWriteMiddleware(mediaTypes: "application/json"))
        AdminController(jobs: dependencies.jobs).addRoutes(to: adminAPI)
        if let devClock = dependencies.devClock {
            DevClockController(clock: devClock, advanced: dependencies.devClockAdvanced).addRoutes(to: adminAPI)
        }
        if let events = dependencies.events { EventsController(events: events).addAdminRoutes(to: adminAPI) }
        if let grants = dependencies.grants {
            GrantsController(grants: grants, catalogue: dependencies.catalogue, clock: dependencies.clock).addRoutes(to: adminAPI)
        }
        if let adjustments = dependencies.adjustments {
            CreditAdjustmentsController(adjustments: adjustments, clock: dependencies.clock).addRoutes(to: adminAPI)
        }
        let questions = AppleQuestionLimits()
        let appStoreSupport = dependencies.appStore.map {
            AppStoreSupportController(
                support: $0, defaultEnvironment: dependencies.analyticsEnvironment, questions: questions, clock: dependencies.clock)
        }
        appStoreSupport?.addRoutes(to: adminAPI)
        let dashboard = router.group("admin")
            .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
            .add(
                middleware: OperatorMiddleware(
                    operators: dependencies.operators, basicRealm: "Storekeeper admin", audit: dependencies.audit, clock: dependencies.clock)
            )
            .add(middleware: SameSiteWriteMiddleware(mediaTypes: "application/x-www-form-urlencoded", "application/json"))
        AdminDashboardController(
            jobs: dependencies.jobs, records: dependencies.records, accounts: dependencies.accounts, events: dependencies.events,
            grants: dependencies.grants, audit: dependencies.audit, search: dependencies.search, adjustments: dependencies.adjustments,
            appStore: dependencies.appStore, questions: questions, catalogue: dependencies.catalogue,
            acknowledgements: dependencies.googleAcknowledgements, clock: dependencies.clock
        ).addRoutes(to: dashboard)
        appStoreSupport?.addDashboardRoutes(to: dashboard)
        if let search = dependencies.search {
            SearchController(search: search, appStore: dependencies.appStore, questions: questions).addRoutes(to: dashboard)
        }
        if let exporter = dependencies.exporter { AccountExportController(exporter: exporter, clock: dependencies.clock).addRoutes(to: dashboard) }
        if let erasure = dependencies.erasure { AccountErasureController(erasure: erasure, clock: dependencies.clock).addRoutes(to: dashboard) }
        AuditController(audit: dependencies.audit).addRoutes(to: dashboard)
        if let analytics = dependencies.analytics {
            AnalyticsController(charts: analytics, defaultEnvironment: dependencies.analyticsEnvironment, clock: dependencies.clock)
                .addRoutes(to: dashboard)
            OverviewPage(
                charts: analytics, retention: dependencies.retention, defaultEnvironment: dependencies.analyticsEnvironment, clock: dependencies.clock
            ).addRoutes(to: dashboard)
        }
        if let retention = dependencies.retention { RetentionReport(retention: retention, clock: dependencies.clock).addRoutes(to: dashboard) }
    }
    // Last: the document served describes the routes this configuration serves, and nothing else.
    OpenAPIController(serving: router.routes).addRoutes(to: router)
    router.add(middleware: UnknownRouteMiddleware<StorekeeperRequestContext>(routes: router.routes, unconfigured: unconfiguredFeatures(dependencies)))
    return router
}

/// The features of `dependencies` that are off, by the path pattern of their routes (`{}` is any one segment, `**` the
/// rest), with what turns each on. Only under an API that is mounted: without its keys, nothing there is served.
func unconfiguredFeatures(_ dependencies: HTTPDependencies) -> [(pattern: String, hint: String)] {
    var off: [(pattern: String, hint: String)] = []
    let stripeOff = "Stripe is not configured: set STOREKEEPER_STRIPE_WEBHOOK_SECRETS (docs/stripe.md)"
    let googleOff =
        "Google Play is not configured: set STOREKEEPER_GOOGLE_PACKAGE_NAME, _PUSH_AUDIENCE and _PUSH_SERVICE_ACCOUNT (docs/google-play.md)"
    let retentionOff = "Retention Messaging is not configured: set STOREKEEPER_RETENTION (docs/retention.md)"
    if !dependencies.apiKeys.isEmpty {
        if dependencies.offers == nil {
            off.append(
                ("/v1/offers/**", "offer signing is not configured: set STOREKEEPER_ASSA_ISSUER_ID, _KEY_ID and _PRIVATE_KEY (docs/offers.md)"))
        }
        if dependencies.stripeAccounts == nil {
            off.append(("/v1/accounts/{}/stripe/**", stripeOff))
        } else if dependencies.stripeAccounts?.selling == nil {
            off.append(("/v1/accounts/{}/stripe/**", "Stripe checkout and portal need STOREKEEPER_STRIPE_API_KEY (docs/stripe.md)"))
        }
        if dependencies.google == nil {
            off.append(("/v1/accounts/{}/google/**", googleOff))
        } else if dependencies.googlePurchases == nil {
            off.append(
                (
                    "/v1/accounts/{}/google/**",
                    "claiming Play purchases needs STOREKEEPER_GOOGLE_SERVICE_ACCOUNT: Play cannot be read (docs/google-play.md)"
                ))
        }
    }
    if dependencies.stripe == nil { off.append(("/stripe/**", stripeOff)) }
    if dependencies.google == nil {
        off.append(("/notifications/google", googleOff))
    }
    if dependencies.retention == nil {
        off.append(("/apple/retention-message", retentionOff))
        if !dependencies.operators.isEmpty { off.append(("/admin/retention", retentionOff)) }
    }
    if dependencies.devClock == nil, !dependencies.operators.isEmpty {
        off.append(("/admin/dev/**", "the dev clock runs only under `storekeeper dev`"))
    }
    return off
}
