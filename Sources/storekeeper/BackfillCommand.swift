import AppStoreModels
import AppStoreServerAPI
import Application
import ArgumentParser
import Foundation
import PostgresNIO
import StorekeeperRuntime

extension AppStoreEnvironment: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }
}

/// Reads the configuration and builds what talks to Apple, or fails with one line.
func serverAPIComponents(requiresDatabase: Bool) throws -> (StorekeeperConfiguration, AppStoreServerClient) {
    let configuration = try StorekeeperConfiguration.load(environment: ProcessInfo.processInfo.environment, requiresDatabase: requiresDatabase)
    guard let settings = configuration.serverAPI else {
        throw CommandFailure(
            "App Store Server API access is not configured: set STOREKEEPER_ASSA_ISSUER_ID, STOREKEEPER_ASSA_KEY_ID and STOREKEEPER_ASSA_PRIVATE_KEY")
    }
    let client = AppStoreServerClient(
        credentials: settings.credentials, baseURL: settings.baseURL,
        verifier: configuration.verifier(), logger: commandLogger("storekeeper.apple"))
    return (configuration, client)
}

struct BackfillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill",
        abstract: "Page Apple's Notification History and enqueue every notification not stored yet.",
        discussion: "Times are ISO 8601 (2026-11-20T00:00:00Z). Apple keeps 180 days of production history, 30 of sandbox.")

    @Option(help: "Start of the window (ISO 8601).") var since: String
    @Option(help: "End of the window (ISO 8601; default now).") var until: String?
    @Flag(help: "Only notifications Apple failed to deliver (or is still retrying).") var onlyFailures = false
    @Option(help: "Production or Sandbox (default: every accepted environment).") var environment: AppStoreEnvironment?

    func run() async throws {
        guard let start = Self.date(since) else { throw CommandFailure("--since must be an ISO 8601 instant, got \"\(since)\"") }
        let end =
            try until.map { text in
                guard let date = Self.date(text) else { throw CommandFailure("--until must be an ISO 8601 instant, got \"\(text)\"") }
                return date
            } ?? Date()
        guard start < end else { throw CommandFailure("--since must be before --until") }
        let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: true)
        let environments = environment.map { [$0] } ?? configuration.environments.sorted { $0.rawValue < $1.rawValue }
        let components = try StorekeeperComponents(configuration: configuration, logger: commandLogger("storekeeper.backfill"))
        let onlyFailures = self.onlyFailures
        let pool = await components.client.startRunning()
        defer { pool.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            guard let url = configuration.databaseURL else { return }
            try await ensureReachable(components.client, url: url, logger: components.logger)
            for environment in environments {
                let report: NotificationHistoryBackfill.Report
                do {
                    report = try await components.backfill(serverAPI).run(
                        NotificationHistoryQuery(startDate: start, endDate: end, onlyFailures: onlyFailures, environment: environment))
                } catch let error as AppStoreServerError {
                    throw CommandFailure("\(environment.rawValue): \(error)")
                }
                say(
                    "\(environment.rawValue): \(report.found) notifications in \(report.pages) pages — \(report.accepted) enqueued, "
                        + "\(report.duplicates) already stored, \(report.ignored) for another app or environment, \(report.rejected) failed verification"
                )
            }
        }
    }

    static func date(_ text: String) -> Date? { RFC3339.date(text) }
}

struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple", abstract: "Talk to the App Store Server API.",
        subcommands: [TestNotification.self, RetentionURLCommand.self, RetentionTestCommand.self])

    struct TestNotification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-notification",
            abstract: "Ask Apple to send a TEST notification to the URL configured in App Store Connect and report whether it arrived.")

        @Option(help: "Production or Sandbox (default: Sandbox when accepted).") var environment: AppStoreEnvironment?
        @Option(help: "Seconds to wait for Apple's delivery report.") var timeout: Int = 60
        @Option(help: "Seconds between polls.") var interval: Double = 3

        func run() async throws {
            let (configuration, serverAPI) = try serverAPIComponents(requiresDatabase: false)
            let environment = environment ?? (configuration.environments.contains(.sandbox) ? .sandbox : .production)
            do {
                let token = try await serverAPI.requestTestNotification(environment: environment)
                say("\(environment.rawValue): Apple accepted the request (token \(token)); waiting for its delivery report…")
                let deadline = Date().addingTimeInterval(TimeInterval(timeout))
                while true {
                    let status = try await serverAPI.testNotificationStatus(token: token, environment: environment)
                    if let last = status.attempts.last {
                        let summary = status.attempts.map { "\($0.date.formatted(Date.ISO8601FormatStyle())) \($0.result)" }.joined(separator: ", ")
                        if status.delivered { return say("delivered: \(summary)") }
                        if Date() >= deadline {
                            throw CommandFailure(
                                "not delivered: \(summary) — check the notification URL in App Store Connect and that it reaches storekeeper serve")
                        }
                        _ = last
                    } else if Date() >= deadline {
                        throw CommandFailure("Apple reported no delivery attempt within \(timeout) s; try again later")
                    }
                    try await Task.sleep(for: .seconds(interval))
                }
            } catch let error as AppStoreServerError {
                throw CommandFailure("\(environment.rawValue): \(error)")
            }
        }
    }
}
