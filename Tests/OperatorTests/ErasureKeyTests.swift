import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Persistence
import StorekeeperRuntime
import Subscriptions
import Testing

@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The erasure key (sql/0067): docs/configuration.md tells the operator never to change `STOREKEEPER_ERASURE_KEY`, since
/// erasures filed under one key are not recognised under another. Judged as an operator meets it: a process started with
/// another key, or none, does not run; the refusal says why in one line.
@Suite("Personal data: the erasure key every process is held to")
struct ErasureKeyTests {
    static let otherKey = "another-erasure-key-0123456789abcdef-012345"

    /// The fingerprint as docs/configuration.md says to compute it with openssl: HMAC-SHA256 of the fixed text under the key.
    static func fingerprint(of key: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data("storekeeper erasure key fingerprint".utf8), using: SymmetricKey(data: Data(key.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// An admin's request to a process of the test's own.
    static func request(port: Int, _ method: String, _ path: String, body: String? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue("Bearer admin-key-erase-00001", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    @Test(
        "after an erasure, work, serve and replay with another key or none end at once with one line naming the key; a serve started before the first erasure answers its own 409, then ends within the re-check's interval; the key itself passes"
    )
    func heldToTheErasuresKey() async throws {
        try await StorekeeperHarness.run(worker: true, environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { harness in
            let other = harness.processEnvironment.merging(["STOREKEEPER_ERASURE_KEY": Self.otherKey]) { $1 }
            // Nothing erased yet: nothing is recorded, and any key (or none) may start — a `serve` with another key too.
            let port = try PrivateCluster.freePort()
            let early = try TestProcess("storekeeper", arguments: ["serve"], environment: other.merging(["STOREKEEPER_PORT": String(port)]) { $1 })
            defer { early.signal(SIGTERM) }
            try await eventually(timeout: .seconds(60), "serve with another key to be ready") {
                (try? await Self.request(port: port, "GET", "/readyz"))?.0 == 200
            }
            try await harness.withHTTP { client in
                #expect(try await harness.count("SELECT count(*) FROM erasure_key_fingerprint") == 0)
                _ = try await AccountErasureTests.subscribeAndErase(harness: harness, client: client)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM erasure_key_fingerprint WHERE fingerprint = '\(Self.fingerprint(of: StorekeeperHarness.erasureKey))'")
                        == 1)
            }
            var none = harness.processEnvironment
            none["STOREKEEPER_ERASURE_KEY"] = nil
            for (environment, refusal) in [
                (other, "STOREKEEPER_ERASURE_KEY is not the key accounts were erased under"),
                (none, "STOREKEEPER_ERASURE_KEY is not set, and accounts were erased under a key"),
            ] {
                let (work, workOutput) = try await TestProcess.run("storekeeper", ["work"], environment: environment)
                #expect(work == 1 && workOutput.contains("storekeeper: \(refusal)"), "\(workOutput)")
                var serving = environment
                serving["STOREKEEPER_PORT"] = String(try PrivateCluster.freePort())
                let (serve, serveOutput) = try await TestProcess.run("storekeeper", ["serve"], environment: serving)
                #expect(serve == 1 && serveOutput.contains("storekeeper: \(refusal)"), "\(serveOutput)")
                // The command's own line, once: the log's critical line says it too, as JSON on standard error.
                #expect(serveOutput.split(separator: "\n").filter { $0.hasPrefix("storekeeper: ") }.count == 1, "\(serveOutput)")
            }
            let (replay, replayOutput) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: other)
            #expect(
                replay == 1 && replayOutput.contains("storekeeper: STOREKEEPER_ERASURE_KEY is not the key accounts were erased under"),
                "\(replayOutput)")
            let (keyed, keyedOutput) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: harness.processEnvironment)
            #expect(keyed == 0, "\(keyedOutput)")

            // The `serve` started before the first erasure recorded the key: its erasure is refused before it touches
            // anything.
            let account = UUID()
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
            }
            let id = account.uuidString.lowercased()
            let (status, body) = try await Self.request(port: port, "POST", "/admin/accounts/\(id)/erase", body: #"{"confirm": "\#(id)"}"#)
            #expect(status == 409, "\(String(decoding: body, as: UTF8.self))")
            #expect(String(decoding: body, as: UTF8.self).contains(#""error":"erasure_key_differs""#), "\(String(decoding: body, as: UTF8.self))")
            #expect(try await harness.count("SELECT count(*) FROM erased_accounts") == 1)
            #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(id)'") == 1)
            // And it does not run on with a key the erasures were not filed under: it ends within the re-check's interval,
            // saying why.
            let ended = await early.waitForExit(timeout: .seconds(40))
            #expect(
                ended == 1 && early.text.contains("storekeeper: STOREKEEPER_ERASURE_KEY is not the key accounts were erased under"), "\(early.text)")

            // The key they were filed under passes the check.
            try await ErasureKeyCheck(
                client: harness.components.client, erased: harness.components.erased, clock: { Date() }, logger: TestDatabase.logger
            ).confirm()
        }
    }

    @Test(
        "erasures filed before the fingerprint was kept: the first process started with a key records it, replay does not; then another key is refused"
    )
    func erasuresFiledBeforeTheFingerprint() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let client = harness.client
            try await client.query(
                "INSERT INTO erased_accounts (account_digest, pseudonym, erased_at, erased_by) VALUES ('d1', 'p1', now(), 'ada')",
                logger: TestDatabase.logger)
            let ours = ErasedAccounts(secret: StorekeeperHarness.erasureKey, logger: TestDatabase.logger)
            let theirs = ErasedAccounts(secret: Self.otherKey, logger: TestDatabase.logger)
            // replay's check records nothing: a wrong key given to a one-off command must not become the deployment's.
            try await client.withConnection { try await theirs.confirmKey(recording: false, at: Date(), on: $0) }
            #expect(try await harness.count("SELECT count(*) FROM erasure_key_fingerprint") == 0)
            try await client.withConnection { try await ours.confirmKey(recording: true, at: Date(), on: $0) }
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM erasure_key_fingerprint WHERE fingerprint = '\(Self.fingerprint(of: StorekeeperHarness.erasureKey))'") == 1)
            await #expect(throws: PersistenceError.self) {
                try await client.withConnection { try await theirs.confirmKey(recording: true, at: Date(), on: $0) }
            }
            try await client.withConnection { try await ours.confirmKey(recording: true, at: Date(), on: $0) }
        }
    }
}
