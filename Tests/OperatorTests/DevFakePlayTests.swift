import Foundation
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// docs/google-play.md's "Try it", as a newcomer runs it: `storekeeper dev --fake-play` and `storekeeper google` as
/// processes in a folder of their own, the status read right after each command.
@Suite("Google Play's Try it with dev --fake-play")
struct DevFakePlayTests {
    @Test(
        "google buy, then the status at once: entitled to the plan bought, a license tester's purchase (Sandbox), three accounts in a row; google cancel keeps access"
    )
    func buyThenReadAtOnce() async throws {
        try await TestDatabase.withMigratedDatabase { url in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sk-play-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let port = try PrivateCluster.freePort()
            let environment = [
                "DATABASE_URL": url.urlString, "STOREKEEPER_TIERS": AppleSamples.repository.appendingPathComponent("config/tiers.yml").path,
                "STOREKEEPER_SQL_DIR": AppleSamples.repository.appendingPathComponent("sql").path,
            ]
            let dev = try TestProcess(
                "storekeeper", arguments: ["dev", "--fake-play", "--port", String(port)], environment: environment, directory: folder)
            defer { dev.signal(SIGTERM) }
            let settings = DevEnvironment(directory: folder.appendingPathComponent(".storekeeper"))
            try await eventually(timeout: .seconds(60), "dev to start") {
                dev.text.contains("Storekeeper is running") && settings.settings()["STOREKEEPER_GOOGLE_FAKE_URL"] != nil
            }
            let key = try #require(settings.settings()["STOREKEEPER_API_KEY"])
            func google(_ arguments: String...) async throws -> String {
                let (status, output) = try await TestProcess.run("storekeeper", ["google"] + arguments, environment: environment, directory: folder)
                #expect(status == 0, "google \(arguments.joined(separator: " ")): \(output)")
                return output
            }
            func status(of id: String) async throws -> StatusAnswer {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/accounts/\(id)/status")!)
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                return try decode(StatusAnswer.self, try await URLSession.shared.data(for: request).0)
            }
            for _ in 0..<3 {
                let account = "android-\(UUID().uuidString.prefix(8).lowercased())"
                let bought = try await google("buy", "--account", account, "--product", "pro/monthly")
                let token = String(bought.split(separator: " ").first ?? "")
                let entitled = try await status(of: account)
                #expect(entitled.entitled && entitled.tier == "pro", "right after google buy: \(entitled.state) \(entitled.tier ?? "-")")
                // A developer's purchases are a license tester's (`testPurchase`): sandbox, as simulate's App Store ones.
                #expect(entitled.subscription?.environment == "Sandbox", "a dev purchase's environment")
                _ = try await google("cancel", token)
                let cancelled = try await status(of: account)
                #expect(cancelled.entitled && cancelled.subscription?.willRenew == false, "right after google cancel: \(cancelled.state)")
            }
        }
    }
}
