import Application
import ArgumentParser
import AsyncHTTPClient
import Events
import Foundation
import NIOCore
import StorekeeperRuntime
import StripeAPI

/// `storekeeper stripe sync`: a catch-up of every Stripe subscription; and, against `storekeeper dev --fake-stripe`,
/// the customer's and billing's actions (`pay`, `renew`, `cancel`, `refund`).
struct StripeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stripe", abstract: "Catch up with Stripe; act on `dev --fake-stripe`'s fake Stripe.",
        subcommands: [Sync.self, Pay.self, Renew.self, Cancel.self, Refund.self])

    /// The environment of a Stripe command: the process's, completed in a `storekeeper dev` folder from dev.env.
    static func environment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let dev = DevEnvironment()
        let settings = dev.settings()
        guard !settings.isEmpty else { return environment }
        for (key, value) in settings where environment[key, default: ""].isEmpty { environment[key] = value }
        // What `dev` sets for itself: its Sandbox signing chain.
        environment["STOREKEEPER_ENVIRONMENTS", default: "Sandbox"] += ""
        environment["STOREKEEPER_ROOT_CERTIFICATES", default: dev.signingDirectory.appendingPathComponent("root.pem").path] += ""
        return environment
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read every Stripe subscription (all statuses, 100 a page) and derive each one: a missed webhook, or a first import.",
            discussion:
                "Needs STOREKEEPER_STRIPE_API_KEY and DATABASE_URL. A subscription that names no account waits for POST /v1/accounts/{id}/stripe/link."
        )
        @Option(help: "Only subscriptions created since this ISO 8601 instant (2026-01-01T00:00:00Z).") var since: String?

        func run() async throws {
            let since = try self.since.map { text in
                guard let date = RFC3339.date(text) else { throw CommandFailure("--since must be an ISO 8601 instant, got \"\(text)\"") }
                return Int64(date.timeIntervalSince1970)
            }
            let configuration = try StorekeeperConfiguration.load(environment: StripeCommand.environment(), requiresDatabase: true)
            guard configuration.stripe?.apiKey != nil else { throw CommandFailure("STOREKEEPER_STRIPE_API_KEY is not set: Stripe cannot be read") }
            let components = try StorekeeperComponents(configuration: configuration, logger: commandLogger("storekeeper.stripe"))
            let pool = await components.client.startRunning()
            defer { pool.cancel() }
            if let url = configuration.databaseURL { try await ensureReachable(components.client, url: url, logger: components.logger) }
            let report: StripeSubscriptions.SyncReport
            do {
                report = try await components.stripeSubscriptions.sync(createdSince: since) { page, count in
                    say("page \(page): \(count) subscriptions")
                }
            } catch let error as StripeAPIError {
                throw CommandFailure("\(error)")
            }
            say("\(report.found) subscriptions: \(report.applied) changed, \(report.unchanged) unchanged, \(report.waiting) waiting for an account")
        }
    }

    struct Pay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The customer pays a Checkout Session (dev --fake-stripe only).")
        @Argument(help: "The session id (cs_…) POST /v1/accounts/{id}/stripe/checkout answered.") var sessionId: String
        @Option(help: "Start with a free trial of this many days.") var trialDays: Int?

        func run() async throws {
            var form = [(String, String)]()
            if let trialDays {
                guard (1...730).contains(trialDays) else { throw CommandFailure("--trial-days must be 1–730, as Stripe's trial_period_days") }
                form.append(("trial_days", String(trialDays)))
            }
            let session = try await FakeControl().post("/_fake/checkout/sessions/\(StripeForm.escape(sessionId))/pay", form)
            say(
                "paid \(sessionId): \(session["subscription"] as? String ?? session["payment_intent"] as? String ?? "-") — its events were delivered and applied"
            )
        }
    }

    struct Renew: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A subscription's period ends: it renews, or its payment fails (dev --fake-stripe only).")
        @Argument(help: "The subscription id (sub_…).") var subscriptionId: String
        @Flag(help: "The renewal's payment fails (past_due).") var failing = false

        func run() async throws {
            let control = try FakeControl()
            // As `simulate renew`: the dev server's clock moves to the period's end first, where Stripe renews.
            try await control.moveDevClock(toPeriodEndOf: subscriptionId)
            let subscription = try await control.post(
                "/_fake/subscriptions/\(StripeForm.escape(subscriptionId))/renew", [("paying", failing ? "false" : "true")])
            say("\(subscriptionId): \(subscription["status"] as? String ?? "-")")
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The customer cancels, at the period's end or now (dev --fake-stripe only).")
        @Argument(help: "The subscription id (sub_…).") var subscriptionId: String
        @Flag(help: "End it now rather than at the period's end.") var now = false

        func run() async throws {
            let subscription = try await FakeControl().post(
                "/_fake/subscriptions/\(StripeForm.escape(subscriptionId))/cancel", [("at_period_end", now ? "false" : "true")])
            say(
                "\(subscriptionId): \(subscription["status"] as? String ?? "-"), cancel at period end: \(subscription["cancel_at_period_end"] as? Bool ?? false)"
            )
        }
    }

    struct Refund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Refund a subscription's newest paid invoice, or a one-time payment (dev --fake-stripe only).")
        @Option(help: "The subscription (sub_…).") var subscription: String?
        @Option(help: "The one-time payment's PaymentIntent (pi_…).") var paymentIntent: String?

        func run() async throws {
            guard (subscription == nil) != (paymentIntent == nil) else {
                throw CommandFailure("give exactly one of --subscription or --payment-intent")
            }
            let form = subscription.map { [("subscription", $0)] } ?? [("payment_intent", paymentIntent!)]
            _ = try await FakeControl().post("/_fake/refunds", form)
            say("refunded \(subscription ?? paymentIntent!)")
        }
    }
}

/// The control routes of `dev --fake-stripe`'s fake Stripe, found through dev.env.
struct FakeControl {
    let baseURL: String
    let apiKey: String

    init() throws {
        let environment = StripeCommand.environment()
        guard let base = environment["STOREKEEPER_STRIPE_BASE_URL"], let key = environment["STOREKEEPER_STRIPE_API_KEY"],
            !base.contains("api.stripe.com")
        else {
            throw CommandFailure("no fake Stripe here: run `storekeeper dev --fake-stripe` in this folder first (Stripe itself has no such action)")
        }
        baseURL = base
        apiKey = key
    }

    /// Moves `dev`'s clock to the end of the subscription's current period, when that is ahead of it.
    func moveDevClock(toPeriodEndOf subscriptionId: String) async throws {
        let settings = DevEnvironment().settings()
        guard let url = settings["STOREKEEPER_URL"] else { return }
        var request = HTTPClientRequest(url: baseURL + "/v1/subscriptions/\(StripeForm.escape(subscriptionId))")
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)), response.status == .ok,
            let body = try? await response.body.collect(upTo: 1 << 20),
            let json = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
            let items = (json["items"] as? [String: Any])?["data"] as? [[String: Any]],
            let end = (items.first?["current_period_end"] as? NSNumber)?.doubleValue
        else { throw CommandFailure("the fake Stripe has no subscription \(subscriptionId)") }
        let server = DevServer(settings: settings, url: url)
        let now = try await server.now()
        if end > now.timeIntervalSince1970 { _ = try await server.advance(by: end - now.timeIntervalSince1970 + 1) }
    }

    func post(_ path: String, _ form: [(String, String)]) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: StripeForm(form).encoded))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            body = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw CommandFailure("the fake Stripe at \(baseURL) does not answer (is `storekeeper dev --fake-stripe` running?)")
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]) ?? [:]
        guard response.status == .ok else {
            let message = (json["error"] as? [String: Any])?["message"] as? String ?? "\(response.status.code)"
            throw CommandFailure(message)
        }
        if let refusal = json["undelivered"] as? String {
            throw CommandFailure("done in the fake Stripe, but Storekeeper refused its events (\(refusal)); they are delivered with the next command")
        }
        // Its events are only queued: the worker reads Stripe and applies them a moment later. Waiting for it, as
        // `simulate` and `google` do, lets the next command (a status read) see what it did.
        try await DevServer(settings: DevEnvironment().settings()).waitForDueJobs()
        return json
    }
}
