import AppStoreServerAPI
import Application
import Entitlements
import Foundation
import GooglePlayAPI
import HTTPAPI
import Hummingbird
import Jobs
import Logging
import NIOPosix
import Persistence
import PostgresNIO
import SignedData
import StatementFencing
import StripeAPI
import StripeStore
import X509

/// The parts every Storekeeper process is assembled from, built once from a configuration. `serve`, `work`, `dev`,
/// tests and benchmarks pick the services they need.
public struct StorekeeperComponents: Sendable {
    public let configuration: StorekeeperConfiguration
    /// The database this process uses: `DATABASE_URL`, or the one `dev` or a test started.
    public let databaseURL: DatabaseURL
    public let client: PostgresClient
    /// `STOREKEEPER_REPLICA_URL`'s pool: status reads that miss the cache, when the replica has replayed far enough.
    public let replica: PostgresClient?
    public let queue: PostgresJobQueue
    public let migrator: SchemaMigrator
    public let verifier: SignedDataVerifier
    /// The credit ledger over the configured tier catalogue.
    public let credits: CreditLedger
    /// The one path that changes subscriptions (workers, claims, rechecks).
    public let writer: SubscriptionWriter
    /// Erased accounts: their pseudonyms, keyed by `STOREKEEPER_ERASURE_KEY`.
    public let erased: ErasedAccounts
    /// Stripe's API, when an API key is configured.
    public let stripeClient: StripeClient?
    /// Brings Play subscriptions up to date (reads nothing when no service account is set).
    public let googlePlaySubscriptions: GooglePlaySubscriptions
    /// Holds of credits before work whose cost is known at its end.
    public let holds: CreditHolds
    /// Play's one-time products: lifetime unlocks, passes, top-ups.
    public let googlePlayProducts: GooglePlayProducts
    /// Play's refunds, their hourly catch-up, and chargeback reviews.
    public let googleRefunds: GoogleRefunds
    /// Brings Stripe subscriptions up to date (and derives them from what is held when no key is set).
    public let stripeSubscriptions: StripeSubscriptions
    /// Stores the events of every change and queues their webhook deliveries.
    public let events: EventRecorder
    /// Settles grants and one-time purchases (their credits, events and next change).
    public let settlement: SourceSettlement
    /// Operators' grants.
    public let grants: OperatorGrants
    /// App Store lifetime and non-renewing purchases.
    public let purchases: OneTimePurchases
    /// Apple's consumption requests: opened by notifications, answered by ``ConsumptionAnswerJob``.
    public let refunds: RefundDefence
    /// `serve`'s account status cache, kept current by ``accountChangeListener()`` and this process's writers.
    public let statusCache: AccountStatusCache
    /// Sends webhook requests.
    let webhookTransport: any WebhookTransport
    /// The App Store Server API client; `nil` without `STOREKEEPER_ASSA_*`.
    public let serverAPI: AppStoreServerClient?
    /// Schedules late-renewal rechecks; `nil` without the Server API.
    let rechecks: RenewalRechecks?
    /// Stores notifications and enqueues their processing (intake, catch-up, backfill).
    public let inbox: NotificationInbox
    /// The request-body memory of this process (`STOREKEEPER_HTTP_BODY_MEMORY_MB`), one budget for every router built
    /// from these components.
    public let bodyBudget: RequestBodyBudget
    /// The event loop of the database connections and of the group commits (intake, spends), on a thread of its
    /// own; `nil`: NIO's shared event loops, which `serve` also answers HTTP on.
    public let databaseExecutor: EventLoopTaskExecutor?
    public let clock: @Sendable () -> Date
    /// `storekeeper dev`'s clock, whose routes the router then has; `clock` reads it.
    public var devClock: DevClock?
    public let logger: Logger

    /// - Parameters:
    ///   - databaseURL: overrides the configuration's (dev and tests start their own database).
    ///   - databaseThread: the database connections get an event loop of their own, on which the group commits run
    ///     too. For `serve`: a group commit's round trips otherwise each wait for an event loop busy with HTTP, which
    ///     under load made a spend group take several times what PostgreSQL spent on it.
    ///   - clock: "now" for status and lifecycle rules; tests pin it.
    ///   - devClock: `storekeeper dev`'s clock: read as `clock`, and moved through its admin routes.
    public init(
        configuration: StorekeeperConfiguration, databaseURL: DatabaseURL? = nil, databaseThread: Bool = false,
        applicationName: String = "storekeeper", clock: @escaping @Sendable () -> Date = { Date() }, devClock: DevClock? = nil,
        logger: Logger
    ) throws {
        // In `dev`, every rule reads the dev clock, the verifier's included.
        let clock: @Sendable () -> Date =
            if let devClock { { devClock.now() } } else { clock }
        self.webhookTransport = HTTPWebhookTransport(jobs: configuration.workerConcurrency)
        // Metrics are bound to their backend when first used: bootstrap it before anything records.
        _ = StorekeeperMetrics.registry
        guard let url = databaseURL ?? configuration.databaseURL else {
            throw ConfigurationError(problems: ["DATABASE_URL is required"])
        }
        self.configuration = configuration
        self.databaseURL = url
        // Operators are named at start-up: an entry that split at a comma inside a key shows up as an extra admin.
        if !configuration.adminKeys.isEmpty {
            logger.info(
                "operator keys", metadata: ["operators": "\(configuration.adminKeys.map { "\($0.name):\($0.role.rawValue)" }.joined(separator: ","))"]
            )
        }
        for operatorKey in configuration.adminKeys where operatorKey.isShort {
            logger.warning(
                "short operator key: guessable, or a key cut at a comma (the list separator)",
                metadata: ["operator": "\(operatorKey.name)", "minimum": "\(OperatorKey.recommendedLength)"])
        }
        // The service's and the metrics' bearer keys too, by position (they have no names), never by value.
        for (variable, keys) in [("STOREKEEPER_API_KEYS", configuration.apiKeys), ("STOREKEEPER_METRICS_KEYS", configuration.metricsKeys)] {
            for (index, key) in keys.enumerated() where key.utf8.count < OperatorKey.recommendedLength {
                logger.warning(
                    "short bearer key: guessable, or a key cut at a comma (the list separator); make one with openssl rand -hex 32",
                    metadata: ["variable": "\(variable)", "key": "\(index + 1) of \(keys.count)", "minimum": "\(OperatorKey.recommendedLength)"])
            }
        }
        for warning in configuration.catalogue.warnings() {
            logger.warning("catalogue written the old way", metadata: ["path": "\(configuration.tiersPath)", "warning": "\(warning)"])
        }
        let databaseExecutor = databaseThread ? Self.databaseThread : nil
        self.databaseExecutor = databaseExecutor
        self.client = Self.pool(
            url, connections: configuration.databaseConnections, applicationName: applicationName, executor: databaseExecutor, logger: logger)
        // A replica that is down is reported once by its tracker; the pool's every failed connection attempt is not.
        var quieter = logger
        quieter.logLevel = max(logger.logLevel, .warning)
        self.replica = configuration.replicaURL.map {
            Self.pool(
                $0, connections: configuration.databaseConnections, applicationName: "\(applicationName) replica reads", executor: databaseExecutor,
                logger: quieter)
        }
        self.statusCache = AccountStatusCache(replica: configuration.replicaURL != nil)
        self.queue = PostgresJobQueue(client: client, logger: logger)
        self.migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: logger)
        self.verifier = configuration.verifier(clock: clock)
        self.credits = CreditLedger(catalogue: configuration.catalogue, logger: logger)
        let verifier = self.verifier
        self.serverAPI = configuration.serverAPI.map { settings in
            // Apple checks the token's `iat` against its own clock: it is signed at the real time, never the injected one.
            AppStoreServerClient(credentials: settings.credentials, baseURL: settings.baseURL, verifier: verifier, logger: logger)
        }
        self.inbox = NotificationInbox(
            client: client, notifier: WorkerNotifier(queue: queue), executor: databaseExecutor, logger: logger)
        // What the rules schedule runs at their clock's instants: in `dev`, the dev clock's.
        let queue = self.queue
        let scheduling: any JobScheduling = if let devClock { DevClockScheduling(queue: queue, offset: { devClock.offset }) } else { queue }
        self.rechecks = serverAPI == nil ? nil : RenewalRechecks(delay: configuration.renewalRecheckDelay, queue: scheduling, logger: logger)
        self.events = EventRecorder(client: client, credits: credits, endpoints: configuration.webhooks, queue: scheduling, logger: logger)
        self.erased = ErasedAccounts(secret: configuration.erasureKey, logger: logger)
        self.writer = SubscriptionWriter(
            credits: credits, queue: scheduling, rechecks: rechecks, events: events,
            analytics: configuration.analytics ? AnalyticsRollups(logger: logger) : nil, erased: erased, logger: logger)
        let stripeClient = configuration.stripe.flatMap { settings in
            settings.apiKey.map {
                StripeClient(
                    apiKey: $0, baseURL: settings.baseURL, limiter: StripeRateLimiter(requestsPerSecond: settings.requestsPerSecond), logger: logger)
            }
        }
        self.stripeClient = stripeClient
        self.googlePlaySubscriptions = GooglePlaySubscriptions(
            client: client,
            play: configuration.googlePlay.flatMap { settings in
                // Access tokens are asked for by the wall clock, never the dev clock: Google checks their times.
                settings.serviceAccount.map {
                    GooglePlayClient(
                        baseURL: settings.apiURL, packageName: settings.packageName, tokens: GoogleAccessTokens(account: $0),
                        requestsPerMinute: settings.requestsPerMinute, logger: logger)
                }
            }, writer: writer, queue: queue, catalogue: configuration.catalogue, erased: erased, clock: clock, logger: logger)
        self.stripeSubscriptions = StripeSubscriptions(
            client: client, stripe: stripeClient, writer: writer,
            settings: StripeDerivation.Settings(graceDays: configuration.stripe?.graceDays ?? 3, catalogue: configuration.catalogue),
            clock: clock,
            logger: logger)
        self.settlement = SourceSettlement(credits: credits, recorder: events, queue: scheduling)
        self.holds = CreditHolds(
            client: client, ledger: credits, queue: scheduling, events: events, cache: statusCache, executor: databaseExecutor, logger: logger)
        self.grants = OperatorGrants(client: client, credits: credits, settlement: settlement, cache: statusCache, logger: logger)
        self.purchases = OneTimePurchases(credits: credits, settlement: settlement, logger: logger)
        self.googlePlayProducts = GooglePlayProducts(
            client: client, play: googlePlaySubscriptions.play, purchases: purchases, credits: credits, events: events, writer: writer, queue: queue,
            erased: erased, clock: clock, logger: logger)
        self.googleRefunds = GoogleRefunds(
            client: client, products: googlePlayProducts, subscriptions: googlePlaySubscriptions, purchases: purchases, credits: credits,
            policy: configuration.refundPolicy, queue: scheduling, events: events, clock: clock, logger: logger)
        self.refunds = RefundDefence(
            client: client, policy: configuration.refundPolicy, answering: serverAPI != nil, queue: scheduling, events: events, logger: logger)
        self.clock = clock
        self.devClock = devClock
        self.logger = logger
        self.bodyBudget = RequestBodyBudget(bytes: configuration.httpLimits.bodyMemory)
    }

    /// A pool of connections to `url`, the primary's or the read replica's.
    private static func pool(
        _ url: DatabaseURL, connections: Int, applicationName: String, executor: EventLoopTaskExecutor?, logger: Logger
    ) -> PostgresClient {
        var clientConfiguration = url.clientConfiguration(maximumConnections: connections, applicationName: applicationName)
        // The pool arms timers (sleeping tasks) whenever a connection goes back idle — a keep-alive ping and an idle
        // timeout — and cancels them at the next lease; a cancelled sleep stays allocated until its deadline. With the
        // defaults (30 s, 60 s) that held a minute of every lease, tens of MB under load. An idle timeout of 10 s keeps
        // it to a few, and closes every idle connection (none is kept as a minimum) before a keep-alive ping could be
        // due, so there is none. A ping armed at the same 10 s raced the idle timeout: the connection was closed with
        // its ping on the way, postgres-nio never answered the ping (see `ClosedConnectionWatch`), and the pool then
        // never finished closing at shutdown — the "did not close within 5 s" warning of a third of `bench e2e` runs.
        clientConfiguration.options.keepAliveBehavior = nil
        clientConfiguration.options.connectionIdleTimeout = .seconds(10)
        return PostgresClient(
            configuration: clientConfiguration,
            eventLoopGroup: executor?.loop ?? SpreadingEventLoopGroup(PostgresClient.defaultEventLoopGroup),
            backgroundLogger: logger)
    }

    /// The process's database event loop, on a thread of its own (one for all components that ask for it).
    private static let databaseThread = EventLoopTaskExecutor(MultiThreadedEventLoopGroup(numberOfThreads: 1).next())

    /// The HTTP routes of `serve`.
    public func router() -> Router<StorekeeperRequestContext> {
        var dependencies = HTTPDependencies(
            verifier: verifier,
            inbox: inbox,
            subscriptions: SubscriptionStore(client: client, logger: logger),
            accounts: AccountStatusQuery(client: client, ledger: credits, cache: statusCache, replica: replica, logger: logger),
            records: AccountRecords(client: client, logger: logger),
            refundRequests: RefundRequestQuery(
                client: client, credits: credits, policy: configuration.refundPolicy,
                answering: Set(
                    [serverAPI.map { _ in Store.appStore }, googlePlaySubscriptions.play.map { _ in Store.googlePlay }].compactMap { $0 }),
                logger: logger),
            usage: SpendCredits(
                client: client, ledger: credits, events: events, cache: statusCache, executor: databaseExecutor, logger: logger),
            claims: SubscriptionClaims(
                client: client, policy: configuration.transferPolicy, writer: writer, credits: credits, events: events,
                purchases: purchases, cache: statusCache, logger: logger),
            catalogue: configuration.catalogue,
            metrics: StorekeeperMetrics.registry,
            readiness: PostgresReadiness(migrator: migrator),
            jobs: queue,
            apiKeys: configuration.apiKeys,
            operators: configuration.adminKeys,
            audit: OperatorActions(client: client, logger: logger),
            clock: clock
        )
        dependencies.shared.jobKinds = jobKinds
        dependencies.service.purchaseIntents = PurchaseIntents(client: client, logger: logger)
        dependencies.shared.events = EventHistory(client: client, queue: queue, logger: logger)
        dependencies.service.refunds = refunds
        dependencies.admin.grants = grants
        dependencies.admin.search = AccountSearch(client: client, logger: logger)
        dependencies.admin.exporter = AccountExport(client: client, logger: logger)
        dependencies.admin.erasure = AccountErasure(client: client, credits: credits, erased: erased, cache: statusCache, logger: logger)
        dependencies.admin.appStore = AppStoreSupport(
            client: client, apple: serverAPI, acceptsProduction: configuration.environments.contains(.production),
            subscriptionProducts: configuration.catalogue.subscriptionProducts(of: .appStore), logger: logger)
        dependencies.admin.adjustments = CreditAdjustments(client: client, credits: credits, events: events, cache: statusCache, logger: logger)
        dependencies.admin.analytics = AnalyticsCharts(
            client: client, rates: configuration.currencyRates, catalogue: configuration.catalogue, logger: logger)
        dependencies.admin.analyticsEnvironment = configuration.environments.contains(.production) ? .production : .sandbox
        dependencies.intake.stripe = configuration.stripe.flatMap { settings in
            settings.webhookSecrets.isEmpty
                ? nil
                : (
                    StripeSignature(secrets: settings.webhookSecrets, tolerance: settings.tolerance),
                    StripeInbox(client: client, queue: queue, livemode: settings.livemode, logger: logger)
                )
        }
        dependencies.service.holds = holds
        dependencies.intake.google = configuration.googlePlay.map { settings in
            (
                GooglePushVerifier(settings: settings.push, source: HTTPGoogleKeySet(url: settings.certificatesURL)),
                GoogleInbox(client: client, queue: queue, packageName: settings.packageName, logger: logger)
            )
        }
        dependencies.service.googlePurchases = googlePlaySubscriptions.play.map {
            GooglePlayClaims(
                client: client, subscriptions: googlePlaySubscriptions, products: googlePlayProducts, play: $0, policy: configuration.transferPolicy,
                cache: statusCache,
                clock: clock, logger: logger)
        }
        if configuration.googlePlay != nil {
            dependencies.shared.googleAcknowledgements = GoogleAcknowledgements(client: client, clock: clock, logger: logger)
        }
        if configuration.stripe != nil {
            let accounts = AccountStatusQuery(client: client, ledger: credits, cache: statusCache, logger: logger)
            dependencies.service.stripeAccounts = (
                stripeSubscriptions,
                stripeClient.map {
                    StripeCheckout(client: client, stripe: $0, accounts: accounts, catalogue: configuration.catalogue, logger: logger)
                }
            )
        }
        let offerSigning = configuration.serverAPI.map { settings in
            OfferSigning(
                client: client, signer: OfferSigner(credentials: settings.credentials), offers: configuration.offers,
                subscriptionProducts: configuration.catalogue.subscriptionProducts(of: nil), erased: erased, logger: logger)
        }
        dependencies.service.offers = offerSigning
        dependencies.intake.retention = configuration.retention.map { policy in
            RetentionMessaging(
                client: client, policy: policy, catalogue: configuration.catalogue, offers: offerSigning, events: events,
                logger: logger)
        }
        dependencies.shared.metricsKeys = configuration.metricsKeys
        dependencies.admin.devClock = devClock
        dependencies.admin.devClockAdvanced = devClockMoved(devClock)
        dependencies.shared.bodyBudget = bodyBudget
        return buildRouter(dependencies)
    }

    /// The job kinds this configuration runs: its handlers'.
    var jobKinds: [String] { jobHandlers().handlers.map(\.kind) }

    /// Every job handler of this configuration and the periodic jobs among them — the one list job kinds are
    /// registered in: the App Store Server API ones (rechecks, the hourly history catch-up, consumption answers)
    /// when it is configured, the signed-payload retention when there is one.
    func jobHandlers() -> (handlers: [any JobHandler], schedules: [PeriodicSchedule]) {
        var handlers: [any JobHandler] = [
            ApplyNotificationJob(
                client: client, writer: writer, credits: credits, refunds: refunds, purchases: purchases,
                jobsPerTransaction: configuration.appliesPerTransaction, clock: clock, logger: logger),
            CreditWindowResetJob(
                client: client, writer: writer, stripe: stripeSubscriptions, play: googlePlaySubscriptions, clock: clock, logger: logger),
            SourceChangeJob(client: client, credits: credits, settlement: settlement, clock: clock, logger: logger),
            TransactionFilingJob(client: client, writer: writer, logger: logger),
            HoldExpiryJob(holds: holds, client: client, clock: clock, logger: logger),
            StripeEventJob(
                client: client, stripe: stripeClient, subscriptions: stripeSubscriptions,
                payments: stripeClient.map {
                    StripePayments(
                        client: client, stripe: $0, purchases: purchases, credits: credits, events: events, writer: writer, clock: clock,
                        logger: logger)
                }, logger: logger),
            GoogleNotificationJob(
                client: client, subscriptions: googlePlaySubscriptions, products: googlePlayProducts, refunds: googleRefunds, logger: logger),
            WebhookDeliveryJob(
                client: client, endpoints: configuration.webhooks, transport: webhookTransport, queue: queue, clock: clock, logger: logger),
        ]
        var schedules: [PeriodicSchedule] = [HoldExpiryJob.schedule]
        if let play = googlePlaySubscriptions.play {
            handlers.append(GoogleAcknowledgeJob(client: client, play: play, clock: clock, logger: logger))
            handlers.append(GoogleVoidedPurchasesJob(refunds: googleRefunds, logger: logger))
            schedules.append(GoogleVoidedPurchasesJob.schedule(every: 3600))
        }
        if serverAPI != nil || googlePlaySubscriptions.play != nil {
            handlers.append(
                ConsumptionAnswerJob(
                    client: client, serverAPI: serverAPI, play: googlePlaySubscriptions.play, credits: credits, policy: configuration.refundPolicy,
                    clock: clock, logger: logger))
        }
        var retentions = [RetentionJob.events(client: client, retention: configuration.eventRetention, clock: clock, logger: logger)]
        if let retention = configuration.signedRetention {
            retentions.append(RetentionJob.signedPayloads(client: client, retention: retention, clock: clock, logger: logger))
        }
        if let window = configuration.idempotencyWindow {
            retentions.append(RetentionJob.idempotencyWindow(client: client, window: window, clock: clock, logger: logger))
        }
        handlers += retentions as [any JobHandler]
        schedules += retentions.map(\.schedule)
        handlers.append(AnalyticsCompactionJob(client: client, catalogue: configuration.catalogue, clock: clock, logger: logger))
        schedules.append(AnalyticsCompactionJob.schedule)
        handlers.append(ConsentLinkJob(client: client, recorder: events, clock: clock, logger: logger))
        schedules.append(ConsentLinkJob.schedule)
        if let serverAPI, let rechecks {
            handlers.append(
                RenewalRecheckJob(client: client, serverAPI: serverAPI, writer: writer, rechecks: rechecks, clock: clock, logger: logger))
            handlers.append(
                NotificationCatchUpJob(
                    backfill: backfill(serverAPI), checkpoints: NotificationHistoryCheckpoints(client: client, logger: logger),
                    environments: configuration.environments.sorted { $0.rawValue < $1.rawValue }, clock: clock))
            schedules.append(NotificationCatchUpJob.schedule(every: 3600))
        }
        return (handlers, schedules)
    }

    /// The HTTP server of `serve`, bound to the configured host and port.
    public func application(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        guard OpenAPIDocument.text != nil else {
            throw ConfigurationError(problems: [
                "the OpenAPI document is missing: install the build's storekeeper_HTTPAPI.resources folder beside the executable or in share/storekeeper (looked in \(OpenAPIDocument.locations.map(\.path).joined(separator: ", ")))"
            ])
        }
        let limits = FileDescriptorLimit.raise(fitting: configuration.httpLimits, logger: logger)
        return Application(
            router: router(),
            server: limits.server(logger: logger),
            configuration: limits.configuration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "storekeeper", logger: logger),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// `storekeeper work`'s own HTTP endpoint: `/metrics` (its job metrics and the queue's depth) and `/healthz`.
    public func metricsApplication(port: Int) -> some ApplicationProtocol {
        let router = Router()
        MetricsController(
            registry: StorekeeperMetrics.registry, jobs: queue, kinds: jobKinds,
            deliveries: EventHistory(client: client, queue: queue, logger: logger),
            acknowledgements: configuration.googlePlay == nil ? nil : GoogleAcknowledgements(client: client, clock: clock, logger: logger)
        )
        .addRoutes(to: router, keys: configuration.metricsKeys)
        router.get("/healthz") { _, _ in HTTPResponse.Status.ok }
        let limits = configuration.httpLimits
        return Application(
            router: router,
            server: limits.server(logger: logger),
            configuration: limits.configuration(
                address: .hostname(configuration.host, port: port), serverName: "storekeeper-work", logger: logger),
            logger: logger)
    }

    /// The job worker of `work`, with every job handler registered — the App Store Server API ones (rechecks, the
    /// hourly history catch-up) when it is configured.
    public func worker(options: JobWorker.Options? = nil) -> JobWorker {
        var options = options ?? JobWorker.Options(concurrency: configuration.workerConcurrency)
        // Where this process also serves (dev, tests), a job's commit must show in the next status read at once, not
        // when its NOTIFY comes round — and it is visible in the database before the job returns.
        // Jobs that change no account's status leave the cache alone.
        let (handlers, schedules) = jobHandlers()
        let statusUnchanged = Set(handlers.filter { !$0.changesAccountStatus }.map(\.kind))
        options.beforeAttempt = { [statusCache] kind in if !statusUnchanged.contains(kind) { statusCache.beginWrite() } }
        options.afterAttempt = { [statusCache] kind in if !statusUnchanged.contains(kind) { statusCache.endWrite() } }
        options.schedules += schedules
        return JobWorker(queue: queue, handlers: handlers, options: options, logger: logger)
    }

    /// Keeps ``statusCache`` current with the other processes' commits; runs beside `serve`.
    public func accountChangeListener() -> AccountChangeListener {
        AccountChangeListener(client: client, cache: statusCache, logger: logger)
    }

    /// Reads the WAL positions that tell which status reads the replica may answer; runs beside `serve` when
    /// `STOREKEEPER_REPLICA_URL` is set.
    public func replicaPositionTracker() -> ReplicaPositionTracker? {
        guard let replica, let url = configuration.replicaURL else { return nil }
        return ReplicaPositionTracker(primary: client, replica: replica, replicaURL: url, cache: statusCache, logger: logger)
    }

    /// Checks at start that the replica accepts `STOREKEEPER_REPLICA_URL`'s login; a refusal is reported, not fatal
    /// (``DatabaseLoginCheck``): status reads stay on the primary.
    public func replicaLoginCheck() -> DatabaseLoginCheck? {
        configuration.replicaURL.map {
            DatabaseLoginCheck(
                url: $0, variable: "STOREKEEPER_REPLICA_URL", onRefusal: .report(meanwhile: "status reads stay on DATABASE_URL until it is fixed"),
                logger: logger)
        }
    }

    /// The Notification History reader that feeds the intake.
    public func backfill(_ serverAPI: AppStoreServerClient) -> NotificationHistoryBackfill {
        NotificationHistoryBackfill(
            serverAPI: serverAPI, verifier: verifier, inbox: inbox,
            logger: logger)
    }
}
