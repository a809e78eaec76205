import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import LocalSigning
import NIOCore
import NIOHTTP1
import StorekeeperRuntime

extension SimulatedEvent.Scenario: ExpressibleByArgument {}

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Sign a notification with the local test chain and POST it, as Apple would; or move the dev server's clock.",
        discussion: """
            Reads .storekeeper/dev.env (written by `storekeeper dev`) for the server URL, API key and bundle id. \
            `simulate hold --account ID --meter ai_requests --amount 50 --key gen-1`, then `simulate settle --account ID \
            --key gen-1 --amount 30` (or `release`), play the app's service around a generation. \
            `simulate advance 30d` moves the dev server's clock on (s, m, h, d or w; or ISO 8601 such as P1M, a calendar month, or PT12H). \
            renew, expire, grace, fail and recover first move it to the end of the period in force, when Apple would \
            send them, so every simulated history is one Apple could produce. Each subscription's exact periods are \
            kept in .storekeeper/simulate/.
            """
    )

    @Argument(
        help:
            "advance, buy (a lifetime, non-renewing or credit pack product), refund-request (the customer asks Apple to refund the subscription's period, or with --transaction a pack bought), hold, settle, release (credits around AI work), or one of: \(SimulatedEvent.Scenario.allCases.map(\.rawValue).joined(separator: ", "))."
    )
    var scenario: String

    @Argument(help: "With advance: how far (30d, 12h, 90m, 45s, 2w, P1M, PT12H).") var duration: String?

    @Option(help: "The account UUID (appAccountToken). Also picks a stable originalTransactionId for it.")
    var account: String?

    @Option(help: "The product id (default: the subscription's current product, else pro.monthly).") var product: String?

    @Option(help: "The product `upgrade` and `downgrade` change to.") var to: String?

    @Option(help: "The originalTransactionId (default: derived from --account, else random).")
    var originalTransactionId: String?

    @Option(
        help:
            "Billing period length in days (default: the product's period in the server's catalogue, in calendar months for P1M or P1Y as Apple bills; else 30 days)."
    )
    var periodDays: Double?

    @Option(help: "Storekeeper's base URL (default: the running dev server's).") var url: String?

    @Flag(help: "subscribe: begin with a 7-day introductory free trial (the next renew starts the first paid period).")
    var trial = false

    @Option(help: "hold: the meter to hold credits of.") var meter: String?

    @Option(help: "hold: the credits to hold; settle: what the work cost.") var amount: Int64?

    @Option(help: "hold: its idempotency key (default: a new one); settle, release: the key of the hold to end.") var key: String?

    @Option(help: "settle, release: the hold's id (instead of --key).") var hold: String?

    @Option(help: "hold: seconds until it is released unless settled (default 900).") var expiresIn: Int?

    @Option(help: "refund-request: a pack's transaction, as `buy` printed it (without: the subscription's period).") var transaction: String?

    func validate() throws {
        // A misspelt scenario is named first: whatever else is wrong, that is.
        guard
            ["advance", "buy", "refund-request"].contains(scenario) || Self.holdScenarios.contains(scenario)
                || SimulatedEvent.Scenario(rawValue: scenario) != nil
        else {
            throw ValidationError(
                "unknown scenario \(scenario); one of: advance, buy, refund-request, hold, settle, release, \(SimulatedEvent.Scenario.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        if transaction != nil, scenario != "refund-request" { throw ValidationError("--transaction is for refund-request") }
        if scenario == "advance" {
            guard let duration, let seconds = Self.seconds(in: duration), seconds > 0, seconds <= 10 * 366 * 86_400 else {
                throw ValidationError(
                    "advance takes a duration forward, more than 0, at most 10 years: 30d, 12h, 90m, 45s, 2w, or ISO 8601 such as P1M or PT12H")
            }
            return
        }
        if Self.holdScenarios.contains(scenario) { return try validateHold() }
        if [meter, key, hold].contains(where: { $0 != nil }) || amount != nil || expiresIn != nil {
            throw ValidationError("--meter, --amount, --key, --hold and --expires-in are for hold, settle and release")
        }
        if let account, UUID(uuidString: account) == nil { throw ValidationError("--account must be a UUID, got \"\(account)\"") }
        // Apple's ids are digits; this one also names a file of the history.
        if let originalTransactionId, !Self.isAppleId(originalTransactionId) {
            throw ValidationError("--original-transaction-id is Apple's, 1–32 digits")
        }
        if scenario == "refund-request" { return try validateRefundRequest() }
        if scenario == "buy" {
            guard product != nil, account != nil else {
                throw ValidationError("buy needs --product (a lifetime, non-renewing or credit pack product) and --account UUID")
            }
            return
        }
        guard let scenario = SimulatedEvent.Scenario(rawValue: scenario) else { return }
        if duration != nil { throw ValidationError("only advance takes a duration") }
        if let periodDays, !(periodDays > 0 && periodDays <= 3660) { throw ValidationError("--period-days must be more than 0 and at most 3660") }
        if trial, scenario != .subscribe { throw ValidationError("--trial is for subscribe only") }
        if (scenario == .upgrade || scenario == .downgrade) != (to != nil) {
            throw ValidationError("--to PRODUCT is required by upgrade and downgrade, and only by them")
        }
    }

    func run() async throws {
        let dev = DevEnvironment()
        let settings = dev.settings()
        let server = DevServer(settings: settings, url: url)
        if scenario == "buy" { return try await buy(server: server, settings: settings, dev: dev) }
        if scenario == "refund-request" { return try await refundRequest(server: server, settings: settings, dev: dev) }
        if Self.holdScenarios.contains(scenario) { return try await runHold(server: server) }
        guard let scenario = SimulatedEvent.Scenario(rawValue: scenario) else {
            let now = try await server.advance(by: try await advanceSeconds(server: server))
            say("the dev server's clock is now \(now.formatted(.iso8601))")
            return try await server.waitForDueJobs()
        }
        let bundleId = Self.bundleId(settings)
        guard FileManager.default.fileExists(atPath: dev.signingDirectory.appendingPathComponent("leaf-key.pem").path) else {
            throw CommandFailure("no local signing chain in \(dev.signingDirectory.path); start `storekeeper dev` first")
        }
        let chain = try dev.signingChain()
        let accountId = account.flatMap(UUID.init(uuidString:))
        let subscriptionId =
            originalTransactionId ?? accountId.map(Self.originalTransactionId(for:))
            ?? String(UInt64.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))
        var subscription = SimulatedEvent.Subscription(
            originalTransactionId: subscriptionId, productId: product ?? "pro.monthly", accountId: accountId,
            bundleId: bundleId, period: (periodDays ?? 30) * 86_400)
        let history = SimulatedHistory(directory: dev.directory.appendingPathComponent("simulate"))
        var current = scenario == .subscribe ? nil : history.current(of: subscriptionId)
        if current == nil, scenario != .subscribe, let known = await self.current(server: server, subscription: subscription) {
            current = known
        }
        guard scenario == .subscribe || current != nil else {
            throw CommandFailure("subscription \(subscriptionId) is not known here: `simulate subscribe` it first")
        }
        let catalogue = try await server.checkProducts([product, to].compactMap { $0 })
        if product == nil, let currentProduct = current?.productId { subscription.productId = currentProduct }
        // Apple upgrades at once to a higher level of the group (1 is the highest) and downgrades at the renewal to a
        // lower one: the other way round is not a history Apple signs.
        if let to, let from = catalogue[subscription.productId]?.level, let target = catalogue[to]?.level {
            if scenario == .upgrade, target > from {
                throw CommandFailure("\(to) is a lower level than \(subscription.productId): `simulate downgrade --to \(to)`")
            }
            if scenario == .downgrade, target < from {
                throw CommandFailure("\(to) is a higher level than \(subscription.productId): `simulate upgrade --to \(to)`")
            }
        }
        // The product the subscription renews into, as the last renewal info signed it: a downgrade takes effect at the
        // renewal (or the recovery from billing retry), and what else is signed before it still says it is pending.
        let renewsInto = current?.lastSigned?.renewalInfo?.autoRenewProductId
        if product == nil, scenario == .renew || scenario == .recover, let renewsInto { subscription.productId = renewsInto }
        // A period as long as the catalogue says the product's is: an annual product renews after a year.
        let periodProduct = (scenario == .upgrade || scenario == .downgrade) ? to ?? subscription.productId : subscription.productId
        if periodDays == nil, let period = catalogue[periodProduct]?.period {
            if let months = Self.months(in: period) {
                subscription.months = months
            } else if let seconds = Self.seconds(in: period) {
                subscription.period = seconds
            }
        }
        let currentPeriod = current?.period
        // What Apple sends at the end of the period in force is sent then: the dev server's clock moves there first.
        var now = try await server.now()
        if [.renew, .expire, .grace, .fail, .recover].contains(scenario), let end = currentPeriod?.end, end > now {
            now = try await server.advance(by: end.timeIntervalSince(now))
            say("the dev server's clock moved to the period's end, \(now.formatted(.iso8601))")
        }
        // A second SUBSCRIBED while a period is in force is not Apple's: it renews or changes the subscription instead.
        // (In grace or billing retry the period has ended: `grace` and `fail` move the clock to its end.)
        if scenario == .subscribe, let standing = history.current(of: subscriptionId), standing.lastSigned?.status ?? 1 == 1,
            standing.period.end > now
        {
            throw CommandFailure(
                "subscription \(subscriptionId) is in force until \(standing.period.end.formatted(.iso8601)): renew, upgrade, downgrade, cancel or expire it"
            )
        }
        if let last = current?.signedDate, Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) <= last {
            now = Date(timeIntervalSince1970: Double(last + 1) / 1000)
        }
        var event = SimulatedEvent.scenario(scenario, subscription: subscription, currentPeriod: currentPeriod, target: to, at: now)
        // After a billing failure (grace or billing retry signed last) Apple's EXPIRED says why: the retries gave up.
        if scenario == .expire, current?.lastSigned?.renewalInfo?.isInBillingRetryPeriod == true {
            event.subtype = "BILLING_RETRY"
            event.renewalInfo?.expirationIntent = 2
        }
        if ![.subscribe, .renew, .recover, .upgrade, .downgrade].contains(scenario), let renewsInto, event.renewalInfo != nil {
            event.renewalInfo?.autoRenewProductId = renewsInto
        }
        // Apple signs what the period cost: the catalogue's price of the product, so the dev server's analytics have money.
        if let productId = event.transaction?.productId, let listed = catalogue[productId], let price = listed.price, let currency = listed.currency {
            event.transaction?.price = price
            event.transaction?.currency = currency
        }
        if trial, let start = event.transaction?.purchaseDate {
            event.transaction?.expiresDate = start + 7 * 86_400_000
            event.renewalInfo?.renewalDate = start + 7 * 86_400_000
        }
        // What is later signed about a trial period (cancel, expire, refund, grace…) is still about the trial.
        let inTrial = trial || (current?.trial == true && ![.renew, .recover, .upgrade, .subscribe].contains(scenario))
        if inTrial {
            event.transaction?.price = 0
            event.transaction?.offerType = 1
            event.transaction?.offerDiscountType = "FREE_TRIAL"
            event.transaction?.offerPeriod = "P1W"
        }
        let signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: bundleId)

        let (status, answer) = try await server.send(.POST, "/notifications/apple", body: try signer.requestBody(for: event))
        let body = String(decoding: answer, as: UTF8.self)
        guard status == 200 else { throw CommandFailure("Storekeeper answered \(status): \(body)") }
        if let transaction = event.transaction, let start = transaction.purchaseDate, let end = transaction.expiresDate {
            try history.record(
                SimulatedHistory.Current(
                    productId: transaction.productId, periodStart: start, periodEnd: end, signedDate: event.signedDate, trial: inTrial,
                    lastSigned: .init(status: event.status, transaction: transaction, renewalInfo: event.renewalInfo)),
                of: subscriptionId)
        }
        say("\(event.notificationType)\(event.subtype.map { "/\($0)" } ?? "") for subscription \(subscriptionId): \(body)")
        try await server.reportApplied(intakeAnswer: answer, account: accountId)
    }

    /// How far `advance` moves the dev clock: whole months or years (`P1M`, `P1Y`) as calendar months from the dev
    /// clock's now, as Apple bills them; anything else by ``seconds(in:)``.
    func advanceSeconds(server: DevServer) async throws -> TimeInterval {
        guard let duration else { return 0 }
        guard let months = Self.months(in: duration) else { return Self.seconds(in: duration) ?? 0 }
        let now = try await server.now()
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        return (utc.date(byAdding: .month, value: months, to: now) ?? now).timeIntervalSince(now)
    }

    /// Calendar months in an ISO 8601 period of whole months or years (`P1M` 1, `P3M` 3, `P1Y` 12); nil for others.
    static func months(in text: String) -> Int? {
        guard text.hasPrefix("P"), let unit = text.last, let count = Int(text.dropFirst().dropLast()), count > 0 else { return nil }
        switch unit {
        case "M": return count
        case "Y": return count * 12
        default: return nil
        }
    }

    /// Seconds in `text`: `<number><s|m|h|d|w>`, or ISO 8601 (`P1M` as 30 days, `P1Y` as 365, `PT12H`; `advance` takes
    /// whole months and years as calendar months instead, ``advanceSeconds(server:)``).
    static func seconds(in text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        if let unit = text.last.flatMap({ units[$0] }), let number = Double(text.dropLast()), number >= 0 { return number * unit }
        guard text.hasPrefix("P"), text.count > 1 else { return nil }
        var seconds: TimeInterval = 0
        var number = ""
        var inTime = false
        for character in text.dropFirst() {
            if character == "T" {
                inTime = true
                continue
            }
            if character.isNumber || character == "." {
                number.append(character)
                continue
            }
            guard let value = Double(number) else { return nil }
            let unit: TimeInterval? =
                switch (character, inTime) {
                case ("Y", false): 365 * 86_400
                case ("M", false): 30 * 86_400
                case ("W", false): 604_800
                case ("D", false): 86_400
                case ("H", true): 3600
                case ("M", true): 60
                case ("S", true): 1
                default: nil
                }
            guard let unit else { return nil }
            seconds += value * unit
            number = ""
        }
        return number.isEmpty ? seconds : nil
    }

    struct Current: Decodable {
        var productId: String?
        var expiresAt: Date?
    }

    /// The product and period the server holds for this subscription, for one `simulate` has no history of (its
    /// times are whole seconds there, so the period's transaction id may differ from the one Apple used).
    private func current(server: DevServer, subscription: SimulatedEvent.Subscription) async -> SimulatedHistory.Current? {
        guard let apiKey = server.apiKey else { return nil }
        var request = HTTPClientRequest(url: server.baseURL + "/v1/subscriptions/" + subscription.originalTransactionId)
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)), response.status == .ok else {
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let body = try? await response.body.collect(upTo: 1 << 20), let current = try? decoder.decode(Current.self, from: body),
            let productId = current.productId, let end = current.expiresAt
        else { return nil }
        let endMilliseconds = Int64(end.timeIntervalSince1970 * 1000)
        return SimulatedHistory.Current(
            productId: productId, periodStart: subscription.periodStart(endingAt: endMilliseconds), periodEnd: endMilliseconds)
    }

    /// A stable, Apple-looking originalTransactionId for an account.
    static func originalTransactionId(for account: UUID) -> String {
        let digest = SHA256.hash(data: Data(account.uuidString.lowercased().utf8))
        let number = digest.prefix(8).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) } % 1_000_000_000_000
        return "2000" + String(format: "%012llu", number)
    }
}
