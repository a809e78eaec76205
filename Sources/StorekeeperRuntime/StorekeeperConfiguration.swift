import Analytics
import AppStoreModels
import AppStoreServerAPI
import Application
import Credits
import Events
import Foundation
import HTTPAPI
import Persistence
import SignedData
import Subscriptions
import X509

/// The configuration of every Storekeeper process, read from environment variables (SPEC §4) and validated as a
/// whole: ``load(environment:requiresDatabase:)`` reports every problem at once.
public struct StorekeeperConfiguration: Sendable {
    public enum LogFormat: String, Sendable { case json, text }

    public var databaseURL: DatabaseURL?
    /// A streaming replica (hot standby) of `databaseURL`'s database that `serve` reads status from when its cache
    /// misses and the replica has replayed the account's last change (`STOREKEEPER_REPLICA_URL`); `nil`: none.
    public var replicaURL: DatabaseURL?
    public var bundleId: String
    public var appAppleId: Int64?
    public var environments: Set<AppStoreEnvironment>
    public var rootCertificates: [Certificate]
    public var onlineChecks: Bool
    public var tiersPath: String
    /// The tier catalogue read from `tiersPath`.
    public var catalogue: TierCatalogue
    public var apiKeys: [String]
    /// The operators of the admin API and dashboard (`STOREKEEPER_ADMIN_KEYS`: `name:role:key` or a bare admin key).
    public var adminKeys: [OperatorKey]
    /// Bearer keys `/metrics` requires (`STOREKEEPER_METRICS_KEYS`); empty: open.
    public var metricsKeys: [String] = []
    /// Timeouts, connections and body memory of the HTTP server (`STOREKEEPER_HTTP_*`).
    public var httpLimits = HTTPServerLimits()
    public var host: String
    public var port: Int
    /// Jobs run at once per `work` process (`STOREKEEPER_WORKER_CONCURRENCY`); see ``defaultWorkerConcurrency``.
    public var workerConcurrency: Int
    /// Applies of notifications claimed together that share one transaction (`STOREKEEPER_APPLIES_PER_TRANSACTION`,
    /// 1–64): a backlog drains with one BEGIN and COMMIT per group instead of per notification; 1 gives every apply
    /// its own.
    public var appliesPerTransaction = 8
    /// Nice value of `storekeeper work` (`STOREKEEPER_WORKER_NICE`, 0–19): above `serve`'s, so the intake keeps its
    /// latency on shared cores.
    public var workerNice: Int32
    /// Port of `storekeeper work`'s own `/metrics` and `/healthz` (`STOREKEEPER_METRICS_PORT`); `nil`: none.
    public var metricsPort: Int?
    public var transferPolicy: TransferPolicy
    public var renewalRecheckDelay: TimeInterval
    /// App Store Server API access (`STOREKEEPER_ASSA_*`); `nil` turns rechecks, catch-up and backfill off.
    public var serverAPI: ServerAPISettings?
    public var logFormat: LogFormat
    /// Receivers of the app's events (`STOREKEEPER_WEBHOOKS`).
    public var webhooks: [WebhookEndpoint] = []
    /// How long events are kept for the feed and the dashboard (`STOREKEEPER_EVENT_RETENTION_DAYS`).
    public var eventRetention: TimeInterval = 30 * 86_400
    /// How long notifications keep their signed payloads (`STOREKEEPER_SIGNED_RETENTION_DAYS`, default 396: 13
    /// months); `nil` keeps them forever (`forever`). The verified facts are kept forever either way.
    public var signedRetention: TimeInterval? = 396 * 86_400
    /// How long usage answers and ended holds are kept, so that a retried request gets its first answer
    /// (`STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS`, default 30, at least 2: longer than a reversal's and a hold's day);
    /// `nil` keeps them forever (`forever`). After it, a key may be used again.
    public var idempotencyWindow: TimeInterval? = 30 * 86_400
    /// Whether workers keep the analytics rollups (`STOREKEEPER_ANALYTICS`, default true).
    public var analytics = true
    /// The reporting currency and its rates (`STOREKEEPER_CURRENCY_RATES`); `nil`: charts show each currency alone.
    public var currencyRates: CurrencyRates?
    /// How consumption requests are answered when the app does not answer itself (`STOREKEEPER_REFUND_POLICY`).
    public var refundPolicy = RefundPolicy()
    /// Promotional offers the app may have signed (`STOREKEEPER_OFFERS`).
    public var offers: [PromotionalOffer] = []
    /// How Apple's Get Retention Message requests are answered (`STOREKEEPER_RETENTION`); `nil` leaves
    /// `POST /apple/retention-message` out.
    public var retention: RetentionPolicy?
    /// Stripe, the web store (`STOREKEEPER_STRIPE_*`); `nil`: neither secrets nor an API key are set.
    public var stripe: StripeSettings?
    /// `STOREKEEPER_ERASURE_KEY`: the secret that keys the digests erasure keeps of erased ids; without it erasure is
    /// refused (409 `not_configured`).
    public var erasureKey: String?
    /// Google Play's push intake (`STOREKEEPER_GOOGLE_*`); `nil`: `POST /notifications/google` is not served.
    public var googlePlay: GooglePlaySettings?

    /// Stripe's webhook endpoint and API.
    public struct StripeSettings: Sendable {
        /// The endpoint's signing secrets (`whsec_…`), several while one is rolled; none: `POST /stripe/webhooks` is
        /// not served.
        public var webhookSecrets: [String]
        /// How old a signature may be, in seconds.
        public var tolerance: TimeInterval
        /// Which mode's events count: live (`true`) or test; the others are stored and ignored.
        public var livemode: Bool
        /// The secret or restricted key the worker reads Stripe with (`STOREKEEPER_STRIPE_API_KEY`); `nil`: events
        /// are stored and acknowledged, nothing is read.
        public var apiKey: String?
        /// `STOREKEEPER_STRIPE_BASE_URL`: Stripe's API host, or a test server.
        public var baseURL: String = "https://api.stripe.com"
        /// `STOREKEEPER_STRIPE_GRACE_DAYS`: how long `past_due` keeps access.
        public var graceDays: Int = 3
        /// `STOREKEEPER_STRIPE_REQUESTS_PER_SECOND`: this process's pace of Stripe requests (Stripe allows 25 a second
        /// per endpoint).
        public var requestsPerSecond: Int = 20
    }

    /// Credentials and base URL of the App Store Server API.
    public struct ServerAPISettings: Sendable {
        public var credentials: AppStoreServerCredentials
        /// Overrides Apple's production and sandbox hosts (tests point it at a local fake).
        public var baseURL: String?
    }

    /// The verification policy this configuration describes.
    public var verificationPolicy: VerificationPolicy {
        VerificationPolicy(
            bundleId: bundleId, appAppleId: appAppleId, environments: environments,
            validationTime: onlineChecks ? .now : .signedDate
        )
    }

    /// The verifier this configuration describes (trusted roots, identity policy, OCSP when online).
    public func verifier(clock: @escaping @Sendable () -> Date = { Date() }) -> SignedDataVerifier {
        SignedDataVerifier(
            rootCertificates: rootCertificates, policy: verificationPolicy, clock: clock,
            ocspTransport: onlineChecks ? HTTPOCSPTransport() : nil)
    }

    /// Sixteen jobs per core, at least 32 and at most 64. The applies of one claim share a transaction, eight at a time
    /// by default (``appliesPerTransaction``), so in a backlog 32 jobs are four transactions at once. Where `serve` and
    /// PostgreSQL share 2 cores with it, 16 (two at once) applied about as many and left the intake more CPU in bursts,
    /// but jobs that wait on the network (webhook deliveries, Stripe's and Google Play's calls) need the slots: the
    /// default stays, and an operator may lower it for `work` alone (docs/capacity.md). The ceiling keeps a big
    /// machine's `work` from asking PostgreSQL for hundreds of connections (16 per core gave 260 on 16 cores): past it,
    /// run another `work` process — they share the queue.
    public static func defaultWorkerConcurrency(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int {
        min(64, max(32, 16 * cores))
    }

    /// The most database connections one process keeps: its jobs at once (``workerConcurrency``) and four for the
    /// worker's own claims, heartbeats and LISTEN, at least 20 — 36 on 2 cores, 68 from 4 cores up. `serve` sizes its
    /// pool the same way (its group commits, status reads and at most eight read-aheads of first spends take a few; the
    /// rest stay unopened). Checked at start against the server's `max_connections` (``ConnectionBudget``).
    public var databaseConnections: Int { max(20, workerConcurrency + 4) }

    /// Reads and validates the configuration.
    /// - Parameter requiresDatabase: whether `DATABASE_URL` must be set (every command but `dev`).
    public static func load(
        environment: [String: String], requiresDatabase: Bool = true
    ) throws(ConfigurationError) -> StorekeeperConfiguration {
        var problems: [String] = []
        func value(_ name: String) -> String? {
            guard let raw = environment[name]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
            return raw
        }
        func list(_ name: String) -> [String] {
            (value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) -> Int {
            guard let text = value(name) else { return fallback }
            guard let number = Int(text), range.contains(number) else {
                problems.append("\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
                return fallback
            }
            return number
        }
        func boolean(_ name: String, default fallback: Bool) -> Bool {
            guard let text = value(name) else { return fallback }
            switch text.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default:
                problems.append("\(name) must be true or false, got \"\(text)\"")
                return fallback
            }
        }
        func choice<T: RawRepresentable>(_ name: String, default fallback: T) -> T where T.RawValue == String {
            guard let text = value(name) else { return fallback }
            guard let parsed = T(rawValue: text.lowercased()) else {
                problems.append("\(name) has an unknown value \"\(text)\"")
                return fallback
            }
            return parsed
        }

        var databaseURL: DatabaseURL?
        if let text = value("DATABASE_URL") {
            do { databaseURL = try DatabaseURL(parsing: text) } catch { problems += error.problems }
        } else if requiresDatabase {
            problems.append("DATABASE_URL is required (postgres://user:pass@host:port/db)")
        }

        let bundleId = value("STOREKEEPER_BUNDLE_ID") ?? ""
        if bundleId.isEmpty { problems.append("STOREKEEPER_BUNDLE_ID is required") }

        var environments: Set<AppStoreEnvironment> = []
        for name in list("STOREKEEPER_ENVIRONMENTS").isEmpty ? ["Production"] : list("STOREKEEPER_ENVIRONMENTS") {
            guard let known = [AppStoreEnvironment.production, .sandbox].first(where: { $0.rawValue.lowercased() == name.lowercased() })
            else {
                problems.append("STOREKEEPER_ENVIRONMENTS: unknown environment \"\(name)\" (use Production, Sandbox)")
                continue
            }
            environments.insert(known)
        }

        var appAppleId: Int64?
        if let text = value("STOREKEEPER_APP_APPLE_ID") {
            appAppleId = Int64(text)
            if appAppleId == nil { problems.append("STOREKEEPER_APP_APPLE_ID must be a number, got \"\(text)\"") }
        } else if environments.contains(.production) {
            problems.append("STOREKEEPER_APP_APPLE_ID is required when Production is accepted")
        }

        let rootPaths = list("STOREKEEPER_ROOT_CERTIFICATES")
        var roots: [Certificate] = []
        if rootPaths.isEmpty { problems.append("STOREKEEPER_ROOT_CERTIFICATES is required (path of Apple Root CA - G3)") }
        for path in rootPaths {
            do { roots.append(try TrustedRoots.load(path: path)) } catch { problems.append("STOREKEEPER_ROOT_CERTIFICATES: \(error.reason)") }
        }

        let onlineChecks = boolean("STOREKEEPER_ONLINE_CHECKS", default: false)

        let tiersPath = value("STOREKEEPER_TIERS") ?? TierCatalogue.defaultPath
        var catalogue = TierCatalogue(meters: [], free: .init(displayName: "Free", allowances: [:]), tiers: [], topUps: [])
        switch TierCatalogue.load(path: tiersPath) {
        case .success(let loaded): catalogue = loaded
        case .failure(let error): problems += error.problems
        }

        var serverAPI: ServerAPISettings?
        let assaNames = ["STOREKEEPER_ASSA_ISSUER_ID", "STOREKEEPER_ASSA_KEY_ID", "STOREKEEPER_ASSA_PRIVATE_KEY"]
        let assaValues = assaNames.map(value)
        if assaValues.allSatisfy({ $0 != nil }), let issuer = assaValues[0], let keyId = assaValues[1], let keyPath = assaValues[2] {
            do {
                let key = try AppStoreServerCredentials.privateKey(p8: keyPath)
                serverAPI = ServerAPISettings(
                    credentials: AppStoreServerCredentials(issuerId: issuer, keyId: keyId, privateKey: key, bundleId: bundleId),
                    baseURL: value("STOREKEEPER_ASSA_BASE_URL"))
            } catch {
                problems.append("STOREKEEPER_ASSA_PRIVATE_KEY: \(error.message)")
            }
        } else if assaValues.contains(where: { $0 != nil }) {
            let missing = zip(assaNames, assaValues).filter { $0.1 == nil }.map(\.0)
            problems.append(
                "App Store Server API access needs all of \(assaNames.joined(separator: ", ")); missing \(missing.joined(separator: ", "))")
        }

        var configuration = StorekeeperConfiguration(
            databaseURL: databaseURL,
            bundleId: bundleId,
            appAppleId: appAppleId,
            environments: environments,
            rootCertificates: roots,
            onlineChecks: onlineChecks,
            tiersPath: tiersPath,
            catalogue: catalogue,
            apiKeys: list("STOREKEEPER_API_KEYS"),
            adminKeys: [],
            host: value("STOREKEEPER_HOST") ?? "127.0.0.1",
            port: integer("STOREKEEPER_PORT", default: 8080, range: 0...65535),
            workerConcurrency: integer("STOREKEEPER_WORKER_CONCURRENCY", default: defaultWorkerConcurrency(), range: 1...1024),
            workerNice: Int32(integer("STOREKEEPER_WORKER_NICE", default: 10, range: 0...19)),
            metricsPort: value("STOREKEEPER_METRICS_PORT") == nil ? nil : integer("STOREKEEPER_METRICS_PORT", default: 0, range: 1...65535),
            transferPolicy: choice("STOREKEEPER_TRANSFER_POLICY", default: TransferPolicy.keep),
            renewalRecheckDelay: TimeInterval(integer("STOREKEEPER_RENEWAL_RECHECK_DELAY", default: 3600, range: 0...(30 * 86_400))),
            serverAPI: serverAPI,
            logFormat: choice("STOREKEEPER_LOG_FORMAT", default: LogFormat.json)
        )
        switch OperatorKey.keys(from: list("STOREKEEPER_ADMIN_KEYS")) {
        case .success(let keys): configuration.adminKeys = keys
        case .failure(let failure): problems += failure.problems.map { "STOREKEEPER_ADMIN_KEYS: \($0)" }
        }
        configuration.metricsKeys = list("STOREKEEPER_METRICS_KEYS")
        if let text = value("STOREKEEPER_REPLICA_URL") {
            do { configuration.replicaURL = try DatabaseURL(parsing: text, variable: "STOREKEEPER_REPLICA_URL") } catch {
                problems += error.problems
            }
        }
        configuration.appliesPerTransaction = integer("STOREKEEPER_APPLIES_PER_TRANSACTION", default: 8, range: 1...64)
        if let text = value("STOREKEEPER_WEBHOOKS") {
            do { configuration.webhooks = try WebhookConfiguration.endpoints(from: text) } catch { problems += error.problems }
        }
        do { configuration.refundPolicy = try RefundPolicy.configured(in: environment) } catch { problems += error.problems }
        if let text = value("STOREKEEPER_OFFERS") {
            do { configuration.offers = try OfferConfiguration.offers(from: text, catalogue: catalogue) } catch { problems += error.problems }
        }
        if let text = value("STOREKEEPER_RETENTION") {
            do {
                configuration.retention = try RetentionConfiguration.policy(
                    from: text, catalogue: catalogue, offers: configuration.offers, canSign: configuration.serverAPI != nil)
            } catch { problems += error.problems }
        }
        let stripeSecrets = list("STOREKEEPER_STRIPE_WEBHOOK_SECRETS")
        for secret in stripeSecrets where !secret.hasPrefix("whsec_") || secret.utf8.count < 16 || secret.utf8.count > 512 {
            problems.append("STOREKEEPER_STRIPE_WEBHOOK_SECRETS: each secret is the endpoint's signing secret, whsec_… as Stripe shows it")
        }
        let stripeLivemode = boolean("STOREKEEPER_STRIPE_LIVEMODE", default: false)
        let stripeTolerance = TimeInterval(integer("STOREKEEPER_STRIPE_WEBHOOK_TOLERANCE", default: 300, range: 1...86_400))
        let stripeKey = value("STOREKEEPER_STRIPE_API_KEY")
        if let stripeKey, !["sk_", "rk_"].contains(where: { stripeKey.hasPrefix($0) }) || stripeKey.utf8.count > 512 {
            problems.append("STOREKEEPER_STRIPE_API_KEY: a secret (sk_…) or restricted (rk_…) key")
        }
        if !stripeSecrets.isEmpty || stripeKey != nil {
            var stripe = StripeSettings(webhookSecrets: stripeSecrets, tolerance: stripeTolerance, livemode: stripeLivemode, apiKey: stripeKey)
            if let base = value("STOREKEEPER_STRIPE_BASE_URL") {
                if let url = URL(string: base), ["http", "https"].contains(url.scheme ?? ""), url.host != nil {
                    stripe.baseURL = base
                } else {
                    problems.append("STOREKEEPER_STRIPE_BASE_URL: an http(s) URL such as https://api.stripe.com")
                }
            }
            stripe.graceDays = integer("STOREKEEPER_STRIPE_GRACE_DAYS", default: 3, range: 0...60)
            stripe.requestsPerSecond = integer("STOREKEEPER_STRIPE_REQUESTS_PER_SECOND", default: 20, range: 1...100_000)
            configuration.stripe = stripe
        }
        if let portal = value("STOREKEEPER_STRIPE_PORTAL_URL") {
            if let url = URL(string: portal), url.scheme == "https", url.host != nil {
                configuration.catalogue.stripePortalURL = portal
            } else {
                problems.append("STOREKEEPER_STRIPE_PORTAL_URL: the billing portal's https login link")
            }
        }
        if let erasureKey = value("STOREKEEPER_ERASURE_KEY") {
            if (32...512).contains(erasureKey.utf8.count) {
                configuration.erasureKey = erasureKey
            } else {
                problems.append(
                    "STOREKEEPER_ERASURE_KEY: a secret of 32 to 512 bytes (openssl rand -hex 32 makes one); it keys the digests of erased ids")
            }
        }
        configuration.googlePlay = GooglePlaySettings.load(value, problems: &problems)
        configuration.catalogue.googlePlayPackageName = configuration.googlePlay?.packageName
        configuration.analytics = boolean("STOREKEEPER_ANALYTICS", default: true)
        if let text = value("STOREKEEPER_CURRENCY_RATES") {
            do { configuration.currencyRates = try CurrencyRatesConfiguration.rates(from: text) } catch { problems += error.problems }
        }
        configuration.eventRetention = TimeInterval(integer("STOREKEEPER_EVENT_RETENTION_DAYS", default: 30, range: 1...3650) * 86_400)
        if value("STOREKEEPER_SIGNED_RETENTION_DAYS")?.lowercased() == "forever" {
            configuration.signedRetention = nil
        } else {
            configuration.signedRetention = TimeInterval(integer("STOREKEEPER_SIGNED_RETENTION_DAYS", default: 396, range: 1...36_500) * 86_400)
        }
        if value("STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS")?.lowercased() == "forever" {
            configuration.idempotencyWindow = nil
        } else {
            configuration.idempotencyWindow = TimeInterval(integer("STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS", default: 30, range: 2...36_500) * 86_400)
        }
        let defaults = HTTPServerLimits()
        func seconds(_ name: String, default fallback: Duration) -> Duration {
            .seconds(integer(name, default: Int(fallback.components.seconds), range: 1...3600))
        }
        configuration.httpLimits = HTTPServerLimits(
            headTimeout: seconds("STOREKEEPER_HTTP_HEAD_TIMEOUT", default: defaults.headTimeout),
            bodyTimeout: seconds("STOREKEEPER_HTTP_BODY_TIMEOUT", default: defaults.bodyTimeout),
            idleTimeout: seconds("STOREKEEPER_HTTP_IDLE_TIMEOUT", default: defaults.idleTimeout),
            writeTimeout: seconds("STOREKEEPER_HTTP_WRITE_TIMEOUT", default: defaults.writeTimeout),
            maximumConnections: integer("STOREKEEPER_HTTP_MAX_CONNECTIONS", default: defaults.maximumConnections, range: 16...1_000_000),
            bodyMemory: integer("STOREKEEPER_HTTP_BODY_MEMORY_MB", default: defaults.bodyMemory >> 20, range: 1...65_536) << 20,
            headBytes: integer("STOREKEEPER_HTTP_MAX_HEAD_KB", default: defaults.headBytes >> 10, range: 4...1024) << 10)
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return configuration
    }
}
