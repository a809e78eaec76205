import Application
import ArgumentParser
import Foundation
import GooglePlayAPI
import StorekeeperRuntime

/// `storekeeper google sync`: reads Play subscription tokens again — every one a notification named, or those of a
/// file for a first import — and derives each subscription.
struct GoogleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google", abstract: "Catch up with Google Play.", subcommands: [Sync.self])

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read every known Play subscription token again (or those of --tokens) and derive each subscription: a missed notification, or a first import.",
            discussion: "Needs STOREKEEPER_GOOGLE_PACKAGE_NAME (with its push settings), STOREKEEPER_GOOGLE_SERVICE_ACCOUNT and DATABASE_URL. Exits 1 when a token could not be read.")
        @Option(help: "A file of purchase tokens, one a line (a first import); without it, every token a notification named.") var tokens: String?

        func run() async throws {
            let given = try tokens.map { path -> [String] in
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw CommandFailure("--tokens: cannot read \(path)") }
                let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                if let bad = lines.firstIndex(where: { $0.utf8.count > 2048 || !$0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } }) {
                    throw CommandFailure("--tokens: line \(bad + 1) is not a purchase token (printable ASCII, at most 2,048 bytes)")
                }
                return lines
            }
            let configuration = try StorekeeperConfiguration.load(environment: ProcessInfo.processInfo.environment, requiresDatabase: true)
            guard configuration.googlePlay?.serviceAccount != nil else {
                throw CommandFailure("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT is not set: Play cannot be read")
            }
            let components = try StorekeeperComponents(configuration: configuration, logger: commandLogger("storekeeper.google"))
            let pool = await components.client.startRunning()
            defer { pool.cancel() }
            if let url = configuration.databaseURL { try await ensureReachable(components.client, url: url, logger: components.logger) }
            let report: GooglePlaySubscriptions.SyncReport
            do {
                report = try await components.googlePlaySubscriptions.sync(tokens: given) { done in say("\(done) tokens read") }
            } catch let error as GooglePlayAPIError {
                throw CommandFailure("\(error)")
            }
            say("\(report.read + report.notFound + report.refused + report.failed) tokens: \(report.read) read, \(report.notFound) not known to Google, \(report.refused) refused, \(report.failed) failed")
            if report.failed > 0 { throw CommandFailure("\(report.failed) tokens could not be read now; run the sync again later") }
        }
    }
}
