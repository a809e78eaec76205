import Application
import ArgumentParser
import AsyncHTTPClient
import Foundation
import GooglePlayAPI
import NIOCore
import StorekeeperRuntime

/// `storekeeper google sync`: reads Play's purchase tokens again — every one filed, or those of a file for a first
/// import — and derives each subscription and one-time purchase (``GooglePlaySync``). Against `storekeeper dev --fake-play`, the customer's and
/// Play billing's actions (`buy`, `renew`, …), each pushed to the intake as Play would.
struct GoogleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google", abstract: "Catch up with Google Play; act on `dev --fake-play`'s fake Google Play.",
        subcommands: [
            Sync.self, Buy.self, Renew.self, Cancel.self, Restore.self, Grace.self, Hold.self, Recover.self, Pause.self, Resume.self,
            Expire.self, Revoke.self, Upgrade.self, Downgrade.self, Refund.self, Chargeback.self,
        ])

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Read every known Play purchase token again (or those of --tokens) and derive each subscription and one-time purchase: a missed notification, or a first import.",
            discussion:
                "Needs STOREKEEPER_GOOGLE_PACKAGE_NAME (with its push settings), STOREKEEPER_GOOGLE_SERVICE_ACCOUNT and DATABASE_URL. Exits 1 when a token could not be read."
        )
        @Option(help: "A file of purchase tokens, one a line (a first import); without it, every token filed.") var tokens: String?

        func run() async throws {
            let given = try tokens.map { path -> [String] in
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw CommandFailure("--tokens: cannot read \(path)") }
                let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                if let bad = lines.firstIndex(where: { $0.utf8.count > 2048 || !$0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } }) {
                    throw CommandFailure("--tokens: line \(bad + 1) is not a purchase token (printable ASCII, at most 2,048 bytes)")
                }
                return lines
            }
            let configuration = try StorekeeperConfiguration.load(environment: ProcessInfo.processInfo.environment, requiresDatabase: true)
            guard configuration.googlePlay?.serviceAccount != nil else {
                throw CommandFailure("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT is not set: Play cannot be read")
            }
            let components = try StorekeeperComponents(configuration: configuration, logger: commandLogger("storekeeper.google"))
            let pool = await components.client.startRunning()
            defer { pool.cancel() }
            if let url = configuration.databaseURL { try await ensureReachable(components.client, url: url, logger: components.logger) }
            let sync = GooglePlaySync(
                client: components.client, subscriptions: components.googlePlaySubscriptions, products: components.googlePlayProducts,
                logger: components.logger)
            let report: GooglePlaySync.Report
            do {
                report = try await sync.sync(tokens: given) { done in say("\(done) tokens read") }
            } catch let error as GooglePlayAPIError {
                throw CommandFailure("\(error)")
            }
            say(
                "\(report.read + report.notFound + report.refused + report.failed) tokens: \(report.read) read, \(report.notFound) not known to Google, \(report.refused) refused, \(report.failed) failed"
            )
            if report.failed > 0 { throw CommandFailure("\(report.failed) tokens could not be read now; run the sync again later") }
        }
    }
}

extension GoogleCommand {
    struct Buy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An Android customer subscribes, or buys a one-time product (dev --fake-play only); prints the purchase token and its order id."
        )
        @Option(
            help: "The account (the app's obfuscatedExternalAccountId: an account id, or a purchase intent's token); none: the purchase names nobody."
        )
        var account: String?
        @Option(help: "The catalogue's google_play subscription (productId/basePlanId), lifetime unlock or top-up (productId).")
        var product = "pro/monthly"
        @Option(help: "Start with a free trial of this many days (subscriptions).") var trialDays: Int?
        @Option(help: "How many units of a one-time product (a top-up's quantity).") var quantity: Int?

        func run() async throws {
            var body: [String: Any] = ["product": product]
            if let account { body["account"] = account }
            let oneTime = !product.contains("/")
            if let trialDays {
                guard !oneTime else { throw CommandFailure("--trial-days is for subscriptions (productId/basePlanId)") }
                body["trialDays"] = trialDays
            }
            if let quantity {
                guard oneTime else { throw CommandFailure("--quantity is for one-time products") }
                body["quantity"] = quantity
            }
            let answer = try await FakePlayControl().post(oneTime ? "/_fake/play/products/buy" : "/_fake/play/buy", body)
            say("\(answer["purchaseToken"] as? String ?? "")  order \(answer["orderId"] as? String ?? "-")")
        }
    }

    struct Renew: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "The next period is paid (SUBSCRIPTION_RENEWED).")
        static let action = "renew"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Cancel: FakePlayAction {
        static let configuration = CommandConfiguration(
            abstract: "The customer turns auto-renew off; access lasts to the expiry (SUBSCRIPTION_CANCELED).")
        static let action = "cancel"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Restore: FakePlayAction {
        static let configuration = CommandConfiguration(
            abstract: "A cancelled subscription is resubscribed before it expires (SUBSCRIPTION_RESTARTED).")
        static let action = "restore"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Grace: FakePlayAction {
        static let configuration = CommandConfiguration(
            abstract: "A renewal's payment fails; access goes on for a 7-day grace period (SUBSCRIPTION_IN_GRACE_PERIOD).")
        static let action = "grace"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Hold: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "The payment still fails: account hold, no access (SUBSCRIPTION_ON_HOLD).")
        static let action = "hold"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Recover: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "The payment goes through at last: a new period (SUBSCRIPTION_RECOVERED).")
        static let action = "recover"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Pause: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "The customer's pause takes effect: no access (SUBSCRIPTION_PAUSED).")
        static let action = "pause"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Resume: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "A paused subscription resumes and is charged (SUBSCRIPTION_RENEWED).")
        static let action = "resume"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Expire: FakePlayAction {
        static let configuration = CommandConfiguration(abstract: "The period ends without renewal (SUBSCRIPTION_EXPIRED).")
        static let action = "expire"
        @Argument(help: "The purchase token.") var token: String
    }
    struct Revoke: FakePlayAction {
        static let configuration = CommandConfiguration(
            abstract: "Google or the developer revokes the subscription: access ends now (SUBSCRIPTION_REVOKED).")
        static let action = "revoke"
        @Argument(help: "The purchase token.") var token: String
    }

    struct Refund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Google refunds and revokes an order (dev --fake-play only): a subscription's period (which ends the subscription), a one-time purchase, or --quantity units of it."
        )
        @Argument(help: "The order id (GPA.…), as `google buy` printed it.") var order: String
        @Option(help: "Units of a one-time purchase to refund (a quantity-based partial refund).") var quantity: Int?

        func run() async throws {
            var body: [String: Any] = [:]
            if let quantity { body["quantity"] = quantity }
            _ = try await FakePlayControl().post("/_fake/play/orders/\(FakePlayControl.segment(order))/refund", body)
            say(
                "refund: \(order) — Play's voided-purchase notification was pushed and applied: what the order gave is taken back"
            )
        }
    }

    struct Chargeback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A customer's bank disputes an order and Google asks for a review within 24 hours (dev --fake-play only).")
        @Argument(help: "The order id (GPA.…).") var order: String

        func run() async throws {
            _ = try await FakePlayControl().post("/_fake/play/orders/\(FakePlayControl.segment(order))/chargeback", [:])
            say("chargeback: \(order) — the refund request shows on the account; Storekeeper answers it through orders.reviewrefund")
        }
    }

    struct Upgrade: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The customer moves to a higher plan now: a new purchase token linked to the old one; prints it.")
        @Argument(help: "The current purchase token.") var token: String
        @Option(help: "The catalogue's google_play subscription to move to (productId/basePlanId).") var to: String

        func run() async throws { try await GoogleCommand.replace(token, with: to) }
    }

    struct Downgrade: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The customer moves to a lower plan: a new purchase token linked to the old one; prints it.")
        @Argument(help: "The current purchase token.") var token: String
        @Option(help: "The catalogue's google_play subscription to move to (productId/basePlanId).") var to: String

        func run() async throws { try await GoogleCommand.replace(token, with: to) }
    }

    static func replace(_ token: String, with product: String) async throws {
        let answer = try await FakePlayControl().post("/_fake/play/tokens/\(FakePlayControl.segment(token))/replace", ["product": product])
        say(answer["purchaseToken"] as? String ?? "")
    }
}

/// A customer's or Play billing's action on one purchase token of the fake Google Play.
protocol FakePlayAction: AsyncParsableCommand {
    static var action: String { get }
    var token: String { get }
}

extension FakePlayAction {
    func run() async throws {
        let answer = try await FakePlayControl().post("/_fake/play/tokens/\(FakePlayControl.segment(token))/\(Self.action)", [:])
        say(
            "\(Self.action): \(token.prefix(32))… — Play's notification \(answer["notificationType"] ?? "?") was pushed and applied"
        )
    }
}

/// The fake Google Play `storekeeper dev --fake-play` runs, found through dev.env.
struct FakePlayControl {
    let baseURL: String

    init() throws {
        guard let base = DevEnvironment().settings()["STOREKEEPER_GOOGLE_FAKE_URL"] else {
            throw CommandFailure(
                "no fake Google Play here: run `storekeeper dev --fake-play` in this folder first (Google Play itself has no such action)")
        }
        baseURL = base
    }

    /// A purchase token as a path segment.
    static func segment(_ token: String) -> String {
        token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw CommandFailure("the fake Google Play at \(baseURL) does not answer (is `storekeeper dev --fake-play` running?)")
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]) ?? [:]
        guard response.status == .ok else {
            throw CommandFailure((json["error"] as? [String: Any])?["message"] as? String ?? "the fake Google Play answered \(response.status.code)")
        }
        if let refusal = json["undelivered"] as? String {
            throw CommandFailure("done in the fake Google Play, but Storekeeper refused its notification (\(refusal))")
        }
        // The push is only queued: the worker reads the token and applies it a moment later. Waiting for it, as
        // `simulate` does, lets the next command (a status read, docs/google-play.md's "Try it") see what it did.
        try await DevServer(settings: DevEnvironment().settings()).waitForDueJobs()
        return json
    }
}
