import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import Logging
import StorekeeperRuntime
import Testing

@Suite("When the database is down")
struct DatabaseDownTests {
    @Test("the intake answers 503 quickly and never 200; readiness fails")
    func unavailable() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-down-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try LocalSigningChain.generate()
        try chain.save(to: directory)
        // Port 1 on loopback: nothing listens, connections are refused.
        let configuration = try StorekeeperConfiguration.load(environment: [
            "DATABASE_URL": "postgres://storekeeper@127.0.0.1:1/postgres?sslmode=disable",
            "STOREKEEPER_BUNDLE_ID": StorekeeperHarness.bundleId, "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": directory.appendingPathComponent("root.pem").path,
            "STOREKEEPER_API_KEYS": StorekeeperHarness.apiKey,
        ])
        let components = try StorekeeperComponents(configuration: configuration, logger: TestDatabase.logger)
        let signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: StorekeeperHarness.bundleId)
        let subscription = SimulatedEvent.Subscription(
            originalTransactionId: "2000000000000009", productId: "pro.monthly", accountId: UUID(), bundleId: StorekeeperHarness.bundleId)
        let body = try signer.requestBody(for: SimulatedEvent.scenario(.subscribe, subscription: subscription, at: Date()))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await components.client.run() }
            defer { group.cancelAll() }
            try await Application(router: components.router()).test(.router) { client in
                let started = ContinuousClock.now
                let response = try await client.postNotification(body)
                #expect(response.status == .serviceUnavailable)
                // The deadline is 5 s; the bound only says "answers instead of hanging" — on a 2-core machine running
                // every suite at once, CPU-bound tests can hold the cooperative pool and delay the deadline's timer.
                #expect(ContinuousClock.now - started < .seconds(30))
                #expect(try await client.execute(uri: "/readyz", method: .get).status == .serviceUnavailable)
                #expect(try await client.getWithKey("/v1/accounts/\(UUID())/status").status == .serviceUnavailable)
                #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            }
        }
    }
}
