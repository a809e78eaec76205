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
        abstract: "Sign a notification with the local test chain and POST it, as Apple would.",
        discussion: "Reads .storekeeper/dev.env (written by `storekeeper dev`) for the server URL, API key and bundle id."
    )

    @Argument(help: "One of: \(SimulatedEvent.Scenario.allCases.map(\.rawValue).joined(separator: ", ")).")
    var scenario: SimulatedEvent.Scenario

    @Option(help: "The account UUID (appAccountToken). Also picks a stable originalTransactionId for it.")
    var account: String?

    @Option(help: "The product id (default: the subscription's current product, else pro.monthly).") var product: String?

    @Option(help: "The product `upgrade` and `downgrade` change to.") var to: String?

    @Option(help: "The originalTransactionId (default: derived from --account, else random).")
    var originalTransactionId: String?

    @Option(help: "Billing period length in days.") var periodDays: Double = 30

    @Option(help: "Storekeeper's base URL (default: the running dev server's).") var url: String?

    func validate() throws {
        if let account, UUID(uuidString: account) == nil { throw ValidationError("--account must be a UUID") }
        if periodDays <= 0 { throw ValidationError("--period-days must be positive") }
        if (scenario == .upgrade || scenario == .downgrade) != (to != nil) {
            throw ValidationError("--to PRODUCT is required by upgrade and downgrade, and only by them")
        }
    }

    func run() async throws {
        let dev = DevEnvironment()
        let settings = dev.settings()
        let baseURL = url ?? settings["STOREKEEPER_URL"] ?? "http://127.0.0.1:8080"
        let bundleId = ProcessInfo.processInfo.environment["STOREKEEPER_BUNDLE_ID"] ?? settings["STOREKEEPER_BUNDLE_ID"]
            ?? "com.example.storekeeper"
        guard FileManager.default.fileExists(atPath: dev.signingDirectory.appendingPathComponent("leaf-key.pem").path) else {
            throw CommandFailure("no local signing chain in \(dev.signingDirectory.path); start `storekeeper dev` first")
        }
        let chain = try dev.signingChain()
        let accountId = account.flatMap(UUID.init(uuidString:))
        let subscriptionId = originalTransactionId ?? accountId.map(Self.originalTransactionId(for:))
            ?? String(UInt64.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))
        var subscription = SimulatedEvent.Subscription(
            originalTransactionId: subscriptionId, productId: product ?? "pro.monthly", accountId: accountId,
            bundleId: bundleId, period: periodDays * 86_400)
        let current = await current(baseURL: baseURL, apiKey: settings["STOREKEEPER_API_KEY"], subscription: subscription)
        if product == nil, let currentProduct = current?.productId { subscription.productId = currentProduct }
        let currentPeriod = current?.expiresAt.map { DateInterval(start: $0.addingTimeInterval(-subscription.period), end: $0) }
        let event = SimulatedEvent.scenario(
            scenario, subscription: subscription, currentPeriod: currentPeriod, target: to, at: Date())
        let signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: bundleId)

        var request = HTTPClientRequest(url: baseURL + "/notifications/apple")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try signer.requestBody(for: event)))
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        } catch {
            throw CommandFailure("cannot reach Storekeeper at \(baseURL): \(error)")
        }
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard response.status.code == 200 else {
            throw CommandFailure("Storekeeper answered \(response.status.code): \(body)")
        }
        say("\(event.notificationType)\(event.subtype.map { "/\($0)" } ?? "") for subscription \(subscriptionId): \(body)")
    }

    struct Current: Decodable {
        var productId: String?
        var expiresAt: Date?
    }

    /// The product and period the server holds for this subscription, so `renew` continues it and `cancel` keeps it.
    private func current(baseURL: String, apiKey: String?, subscription: SimulatedEvent.Subscription) async -> Current? {
        guard let apiKey, scenario != .subscribe else { return nil }
        var request = HTTPClientRequest(url: baseURL + "/v1/subscriptions/" + subscription.originalTransactionId)
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)), response.status == .ok else {
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let body = try? await response.body.collect(upTo: 1 << 20) else { return nil }
        return try? decoder.decode(Current.self, from: body)
    }

    /// A stable, Apple-looking originalTransactionId for an account.
    static func originalTransactionId(for account: UUID) -> String {
        let digest = SHA256.hash(data: Data(account.uuidString.lowercased().utf8))
        let number = digest.prefix(8).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) } % 1_000_000_000_000
        return "2000" + String(format: "%012llu", number)
    }
}
