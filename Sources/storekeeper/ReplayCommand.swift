import ArgumentParser
import Foundation
import Jobs
import Persistence
import PostgresNIO
import Subscriptions

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Rebuild subscriptions from their stored notifications and claims and report any difference.",
        discussion: """
            Exit status: 0 when every rebuilt state equals the stored one (or --write stored it), 3 when some \
            differ, 1 on errors.
            """)

    @Option(help: "Every subscription of this account.") var account: String?
    @Option(help: "One subscription (originalTransactionId).") var subscription: String?
    @Flag(help: "Store the rebuilt states and archive over the stored ones, and post any credit operation missing from the ledger.") var write = false

    func validate() throws {
        guard (account == nil) != (subscription == nil) else {
            throw ValidationError("give exactly one of --account ID or --subscription OTID")
        }
        if let account, UUID(uuidString: account) == nil {
            throw ValidationError("--account must be a UUID, got \"\(account)\"")
        }
    }

    func run() async throws {
        let now = Date()
        let write = self.write
        let account = self.account.flatMap(UUID.init(uuidString:))
        let single = subscription
        let catalogue = try loadCatalogue()
        let results = try await withDatabase(label: "storekeeper.replay") { client, logger in
            let ids: [String]
            if let account {
                ids = try await SubscriptionStore(client: client, logger: logger).subscriptions(forAccount: account)
                    .map(\.originalTransactionId)
            } else {
                ids = single.map { [$0] } ?? []
            }
            let credits = CreditLedger(catalogue: catalogue, queue: PostgresJobQueue(client: client, logger: logger), logger: logger)
            let writer = SubscriptionWriter(client: client, credits: credits, rechecks: nil, logger: logger)
            var results: [(String, [String])] = []
            for id in ids {
                let (stored, rebuilt) = try await client.withTransaction(logger: logger) { connection in
                    try await writer.replay(id, now: now, write: write, on: connection)
                }
                guard stored != nil || rebuilt != nil else { throw CommandFailure("no subscription \(id) and no stored events for it") }
                results.append((id, try Self.differences(stored, rebuilt)))
            }
            return results
        }
        if results.isEmpty { return say("no subscriptions for that account") }
        var differing = 0
        for (id, differences) in results {
            if differences.isEmpty {
                say("\(id): matches its stored events")
            } else {
                differing += 1
                say("\(id): differs from a rebuild from its stored events\(write ? " — rebuilt state stored" : ""):")
                differences.forEach { say("  \($0)") }
            }
        }
        if differing > 0, !write {
            say("\(differing) of \(results.count) subscriptions differ; run again with --write to store the rebuilt state")
            throw ExitCode(3)
        }
    }

    /// `field: stored → rebuilt` for every field that differs.
    static func differences(_ stored: SubscriptionState?, _ rebuilt: SubscriptionState?) throws -> [String] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        func fields(_ state: SubscriptionState?) throws -> [String: String] {
            guard let state else { return [:] }
            let object = try JSONSerialization.jsonObject(with: try encoder.encode(state)) as? [String: Any] ?? [:]
            return object.mapValues { value in
                (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]))
                    .map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
            }
        }
        let before = try fields(stored)
        let after = try fields(rebuilt)
        return Set(before.keys).union(after.keys).sorted().compactMap { key in
            before[key] == after[key] ? nil : "\(key): \(before[key] ?? "null") → \(after[key] ?? "null")"
        }
    }
}
