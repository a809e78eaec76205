import Foundation
import Hummingbird
import HummingbirdTesting
import LocalSigning
import Logging
import StorekeeperRuntime

/// The real router of a production-shaped server (service and operator keys, no Stripe, no Google Play, not `dev`)
/// whose database is unreachable: what these routes answer is decided at the edge, before any statement — so they
/// run in milliseconds, and an answer that needed the database would show as a `not_ready`/`unavailable` failure.
enum UnreachableDatabaseServer {
    static let apiKey = "route-test-api-key"
    static let viewerKey = "route-viewer-key-0001"
    static let adminKey = "route-admin-key-0001"

    static func withClient(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-route-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try LocalSigningChain.generate()
        try chain.save(to: directory)
        // Port 1 on the loopback: nothing listens there, so a connection is refused at once.
        let configuration = try StorekeeperConfiguration.load(environment: [
            "DATABASE_URL": "postgres://storekeeper@127.0.0.1:1/storekeeper?sslmode=disable",
            "STOREKEEPER_BUNDLE_ID": "com.example.app",
            "STOREKEEPER_ENVIRONMENTS": "Production",
            "STOREKEEPER_APP_APPLE_ID": "1234567890",
            "STOREKEEPER_ROOT_CERTIFICATES": directory.appendingPathComponent("root.pem").path,
            "STOREKEEPER_API_KEYS": apiKey,
            "STOREKEEPER_ADMIN_KEYS": "vera:viewer:\(viewerKey),ada:admin:\(adminKey)",
        ])
        var logger = Logger(label: "route-tests")
        logger.logLevel = .critical
        let components = try StorekeeperComponents(configuration: configuration, logger: logger)
        try await Application(router: components.router()).test(.router) { client in try await body(client) }
    }
}
