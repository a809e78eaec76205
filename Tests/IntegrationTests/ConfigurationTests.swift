import Foundation
import StorekeeperRuntime
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test("bad configuration is one error that lists every problem")
    func everyProblemAtOnce() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(environment: [
                "DATABASE_URL": "mysql://nope",
                "STOREKEEPER_ENVIRONMENTS": "Production,Staging",
                "STOREKEEPER_ROOT_CERTIFICATES": "/nonexistent/root.cer",
                "STOREKEEPER_PORT": "99999",
                "STOREKEEPER_TRANSFER_POLICY": "steal",
            ])
        }
        let problems = try #require(error?.problems)
        #expect(problems.count == 7, "\(problems)")
        let text = error?.description ?? ""
        for needle in ["DATABASE_URL", "STOREKEEPER_BUNDLE_ID", "Staging", "STOREKEEPER_APP_APPLE_ID", "/nonexistent/root.cer", "STOREKEEPER_PORT", "STOREKEEPER_TRANSFER_POLICY"] {
            #expect(text.contains(needle), "missing \(needle) in: \(text)")
        }
        #expect(!text.contains("\n"))
    }

    @Test("DATABASE_URL is optional only where a private cluster is started")
    func databaseOptionalForDev() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple-real/AppleRootCA-G3.cer")
        let environment = [
            "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": root.path,
        ]
        let configuration = try StorekeeperConfiguration.load(environment: environment, requiresDatabase: false)
        #expect(configuration.databaseURL == nil)
        #expect(configuration.port == 8080)
        #expect(throws: ConfigurationError.self) { try StorekeeperConfiguration.load(environment: environment) }
    }
}
