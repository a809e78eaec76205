import AppStoreModels
import AppStoreServerAPI
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Jobs
import LocalSigning
import Logging
import Testing

/// A fake Apple (its own Apple-shaped chain and an API key) running on a local port, and the environment that points
/// Storekeeper at it.
struct FakeApple {
    let server: FakeAppStoreServer
    let chain: LocalSigningChain
    let rootPath: String
    let keyPath: String
    let url: String
    let privateKey: P256.Signing.PrivateKey

    var environment: [String: String] {
        [
            "STOREKEEPER_ASSA_ISSUER_ID": "issuer-1", "STOREKEEPER_ASSA_KEY_ID": "KEY123",
            "STOREKEEPER_ASSA_PRIVATE_KEY": keyPath, "STOREKEEPER_ASSA_BASE_URL": url,
        ]
    }

    static func run(_ body: @escaping @Sendable (FakeApple) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try LocalSigningChain.generate()
        try chain.save(to: directory)
        let key = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("AuthKey_KEY123.p8").path
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        let server = FakeAppStoreServer(
            signer: try JWSSigner(chain: chain), keyId: "KEY123", issuerId: "issuer-1", bundleId: StorekeeperHarness.bundleId,
            publicKey: key.publicKey)
        try await Application(router: server.router()).test(.live) { live in
            try await body(
                FakeApple(
                    server: server, chain: chain, rootPath: directory.appendingPathComponent("root.pem").path, keyPath: keyPath,
                    url: "http://127.0.0.1:\(live.port!)", privateKey: key))
        }
    }

    /// A harness whose verifier trusts the fake's chain and whose Server API client talks to it.
    func harness(
        worker: Bool = true, extra: [String: String] = [:], clock: @escaping @Sendable () -> Date = { Date() },
        _ body: (StorekeeperHarness) async throws -> Void
    ) async throws {
        try await StorekeeperHarness.run(
            worker: worker, environment: environment.merging(extra) { _, new in new }, rootPaths: [rootPath], clock: clock, body)
    }
}
