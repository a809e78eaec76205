import AppStoreModels
import AppStoreServerAPI
import ArgumentParser
import Foundation
import StorekeeperRuntime

/// `storekeeper apple retention-url get|set|delete` and `storekeeper apple retention-test`: the Retention Messaging
/// API's realtime URL and performance test, through the App Store Server API client (docs/retention.md).
struct RetentionURLCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention-url", abstract: "Show, set or delete the URL Apple calls for retention messages (Retention Messaging API).",
        subcommands: [Get.self, Set.self, Delete.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print the URL Apple calls, or say none is set.")
        @Option(help: "Production or Sandbox (default: Sandbox when accepted).") var environment: AppStoreEnvironment?

        func run() async throws {
            let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: false)
            let environment = environment ?? configuration.defaultAppleEnvironment
            do {
                if let url = try await serverAPI.retentionURL(environment: environment) {
                    say("\(environment.rawValue): \(url)")
                } else {
                    say("\(environment.rawValue): no retention URL is set; Apple shows the default message")
                }
            } catch { throw CommandFailure("\(environment.rawValue): \(error)") }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Point Apple's retention requests at URL (this server's POST /apple/retention-message).")
        @Argument(help: "The https URL of POST /apple/retention-message, at most 256 bytes.") var url: String
        @Option(help: "Production or Sandbox (default: Sandbox when accepted).") var environment: AppStoreEnvironment?

        func validate() throws {
            // Apple calls https URLs only; plain http is let through for a loopback host, for a local fake of Apple.
            guard url.utf8.count <= 256, let parsed = URL(string: url), let host = parsed.host,
                parsed.scheme == "https" || (parsed.scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host))
            else {
                throw ValidationError(
                    "URL must be an https URL of at most 256 bytes, such as https://storekeeper.example.com/apple/retention-message")
            }
        }

        func run() async throws {
            let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: false)
            let environment = environment ?? configuration.defaultAppleEnvironment
            do {
                try await serverAPI.setRetentionURL(url, environment: environment)
                say("\(environment.rawValue): Apple now asks \(url); run storekeeper apple retention-test before relying on it")
            } catch { throw CommandFailure("\(environment.rawValue): \(error)") }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Stop Apple's retention requests: it shows the default message.")
        @Option(help: "Production or Sandbox (default: Sandbox when accepted).") var environment: AppStoreEnvironment?

        func run() async throws {
            let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: false)
            let environment = environment ?? configuration.defaultAppleEnvironment
            do {
                try await serverAPI.deleteRetentionURL(environment: environment)
                say("\(environment.rawValue): the retention URL is deleted")
            } catch { throw CommandFailure("\(environment.rawValue): \(error)") }
        }
    }
}

struct RetentionTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention-test",
        abstract: "Run Apple's performance test of the retention URL and report its result (exit 1 unless it passes).")

    @Option(help: "A subscription's originalTransactionId the test requests are about.") var originalTransactionId: String
    @Option(help: "Production or Sandbox (default: Sandbox when accepted).") var environment: AppStoreEnvironment?
    @Option(help: "Seconds to wait for the result.") var timeout: Int = 300
    @Option(help: "Seconds between polls.") var interval: Double = 5

    func validate() throws {
        guard !originalTransactionId.isEmpty, originalTransactionId.utf8.count <= 64, originalTransactionId.allSatisfy({ $0.isASCII && $0.isNumber })
        else {
            throw ValidationError("--original-transaction-id must be an App Store transaction id (digits)")
        }
        guard timeout > 0, interval > 0 else { throw ValidationError("--timeout and --interval must be positive") }
    }

    func run() async throws {
        let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: false)
        let environment = environment ?? configuration.defaultAppleEnvironment
        do {
            let id = try await serverAPI.startRetentionPerformanceTest(originalTransactionId: originalTransactionId, environment: environment)
            say("\(environment.rawValue): Apple started performance test \(id); waiting for its result…")
            let deadline = Date().addingTimeInterval(TimeInterval(timeout))
            while true {
                let test = try await serverAPI.retentionPerformanceTestResult(id: id, environment: environment)
                if let result = test.result, result != "PENDING" {
                    let times =
                        test.responseTimes.map { "p50 \($0.p50 ?? 0) ms, p90 \($0.p90 ?? 0) ms, p99 \($0.p99 ?? 0) ms" } ?? "no response times"
                    let failures = (test.failures ?? [:]).filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }
                    let summary =
                        "\(result): success rate \(test.successRate ?? 0) %, \(times)"
                        + (failures.isEmpty ? "" : "; failures: \(failures.joined(separator: ", "))") + " (target \(test.target ?? "?"))"
                    guard result == "PASS" else { throw CommandFailure(summary) }
                    return say(summary)
                }
                if Date() >= deadline { throw CommandFailure("Apple reported no result within \(timeout) s (test \(id)); ask again later") }
                try await Task.sleep(for: .seconds(interval))
            }
        } catch let error as AppStoreServerError {
            throw CommandFailure("\(environment.rawValue): \(error)")
        }
    }
}

extension StorekeeperConfiguration {
    /// The environment Apple commands talk to unless told: Sandbox when accepted.
    var defaultAppleEnvironment: AppStoreEnvironment { environments.contains(.sandbox) ? .sandbox : .production }
}
