import Foundation
import HTTPAPI
import Hummingbird
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

/// The README's HTTP and command tables describe the code as it is: every route of the router (every feature on)
/// and every command of the CLI is listed, and nothing listed is missing from the code.
@Suite("README tables")
struct ReadmeTablesTests {
    static let readme: String = (try? String(contentsOf: AppleSamples.repository.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""

    /// The README section under `## title`, up to the next `## `.
    static func section(_ title: String) -> String {
        guard let start = readme.range(of: "\n## \(title)\n") else { return "" }
        let rest = readme[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    /// `METHOD /path` with every parameter written `{}`.
    static func normalized(_ method: String, _ path: String) -> String {
        let segments = path.split(separator: "/").map { segment -> String in
            segment.hasPrefix("{") || segment.hasPrefix(":") ? "{}" : String(segment)
        }
        return "\(method) /" + segments.joined(separator: "/")
    }

    @Test(
        "docs/configuration.md, which says it lists every variable, names each STOREKEEPER_ variable the server and the CLI read (but the ones `dev` writes for itself) and each of the README's table"
    )
    func configurationVariables() throws {
        let root = AppleSamples.repository
        let documented = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let quoted = try Regex(#""(STOREKEEPER_[A-Z0-9_]+)""#)
        var read: Set<String> = []
        let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.path.contains("/storekeeper-bench/") else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            read.formUnion(text.matches(of: quoted).map { String($0.output[1].substring!) })
        }
        // What `storekeeper dev` writes to .storekeeper/dev.env for the CLI to find its server, key and fakes: never set by hand.
        let devOwn: Set = ["STOREKEEPER_URL", "STOREKEEPER_API_KEY", "STOREKEEPER_GOOGLE_FAKE_URL", "STOREKEEPER_DEV_GOOGLE_PACKAGE_NAME"]
        #expect(read.count > 40, "the sources were not read: \(read.count) variables")
        #expect(read.subtracting(devOwn).filter { !documented.contains("`\($0)`") }.sorted() == [])
        let tableRows = Self.readme.split(separator: "\n").filter { $0.hasPrefix("| `STOREKEEPER_") }
        let inReadme = Set(tableRows.flatMap { $0.matches(of: #/`(STOREKEEPER_[A-Z0-9_]+)`/#).map { String($0.output.1) } })
        #expect(inReadme.count > 40)
        #expect(inReadme.filter { !documented.contains("`\($0)`") }.sorted() == [])
    }

    @Test("the README's table of error codes names every code the server answers, each once, and no other")
    func errorCodes() throws {
        let http = Self.section("HTTP")
        let table = try #require(http.range(of: "| code | status | meaning |")).upperBound
        let rows = http[table...].split(separator: "\n").dropFirst().prefix { $0.hasPrefix("|") }
        var listed: [String] = []
        for row in rows {
            let first = row.split(separator: "|", omittingEmptySubsequences: false)[1]
            listed += first.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        let answered = Set(APIError.Code.allCases.map(\.description))
        #expect(
            Set(listed) == answered, "missing: \(answered.subtracting(listed).sorted()); not a code: \(Set(listed).subtracting(answered).sorted())")
        #expect(listed.count == Set(listed).count, "a code listed twice: \(listed)")
    }

    @Test("every route is in the README's HTTP table, and every route there exists")
    func routes() async throws {
        let environment = [
            "STOREKEEPER_ADMIN_KEYS": "admin-key", "STOREKEEPER_OFFERS": StorekeeperHarness.offers,
            "STOREKEEPER_RETENTION": "default: { message: 6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10 }",
            "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": "whsec_readme_table_secret",
            "STOREKEEPER_GOOGLE_PACKAGE_NAME": "com.example.app", "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": "https://example.com/notifications/google",
            "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": "push@example.iam.gserviceaccount.com",
            "STOREKEEPER_WEBHOOKS": "{endpoints: [{name: app, url: 'http://127.0.0.1:9/hook', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']}]}",
            // The In-App Purchase key turns offer signing on (its routes are served only then); Apple is not called.
            "STOREKEEPER_ASSA_ISSUER_ID": "issuer", "STOREKEEPER_ASSA_KEY_ID": "KEY", "STOREKEEPER_ASSA_PRIVATE_KEY": OpenAPITests.inAppPurchaseKey,
            "STOREKEEPER_ASSA_BASE_URL": "http://127.0.0.1:1",
            "STOREKEEPER_STRIPE_API_KEY": "sk_test_readme", "STOREKEEPER_STRIPE_BASE_URL": "http://127.0.0.1:1",
            "STOREKEEPER_GOOGLE_SERVICE_ACCOUNT": OpenAPITests.playServiceAccount, "STOREKEEPER_GOOGLE_PLAY_API_URL": "http://127.0.0.1:1",
        ]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            var components = harness.components
            components.devClock = DevClock()
            let code = Set(components.router().routes.map { Self.normalized($0.method.rawValue, $0.path.description) })
            let table = Self.section("HTTP")
            let pattern = try Regex(#"`(GET|POST|PUT|DELETE|PATCH) (/[^\s`\[?]*)"#)
            let listed = Set(
                table.matches(of: pattern).map { match in
                    Self.normalized(String(match.output[1].substring!), String(match.output[2].substring!))
                })
            #expect(!listed.isEmpty, "no HTTP table in README.md")
            #expect(code.subtracting(listed).sorted() == [], "routes missing from the README's HTTP table")
            #expect(listed.subtracting(code).sorted() == [], "routes in the README that the router does not have")
        }
    }

    @Test(
        "every command and subcommand of both executables is in the README's command table, and every one there exists",
        arguments: ["storekeeper", "storekeeper-bench"])
    func commands(executable: String) async throws {
        func subcommands(_ arguments: [String]) async throws -> [String] {
            let (status, help) = try await TestProcess.run(executable, arguments + ["--help"], environment: [:])
            #expect(status == 0)
            guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
            return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
                .prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
                .compactMap { $0.split(separator: " ").first.map(String.init) }
        }
        let table = Self.section("Commands")
        #expect(!table.isEmpty, "no command table in README.md")
        var inCode: Set<String> = []
        for command in try await subcommands([]) {
            let nested = try await subcommands([command])
            if nested.isEmpty { inCode.insert(command) } else { for sub in nested { inCode.insert("\(command) \(sub)") } }
        }
        // A row names a command as `storekeeper NAME …`, a group's subcommands as `storekeeper GROUP a\|b ARG\|c …`.
        let prefix = "| `\(executable) "
        let rows = table.split(separator: "\n").filter { $0.hasPrefix(prefix) }
        var listed: Set<String> = []
        for row in rows {
            let cell = row.dropFirst(prefix.count).prefix { $0 != "`" }
            guard let first = cell.split(separator: " ").first.map(String.init) else { continue }
            guard inCode.contains(where: { $0.hasPrefix("\(first) ") }) else {
                listed.insert(first)
                continue
            }
            for alternative in cell.dropFirst(first.count).replacingOccurrences(of: "\\|", with: "\u{1}").split(separator: "\u{1}") {
                if let sub = alternative.split(separator: " ").first { listed.insert("\(first) \(sub)") }
            }
        }
        #expect(inCode.subtracting(listed).sorted() == [], "commands missing from the README's command table")
        #expect(listed.subtracting(inCode).sorted() == [], "commands in the README that the CLI does not have")
    }
}
