import Application
import ArgumentParser
import Events
import Foundation
import Jobs
import Persistence
import StorekeeperRuntime
import Subscriptions

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Look at the events sent to the app's services and redeliver them (reads DATABASE_URL).",
        subcommands: [List.self, Show.self, Redeliver.self])

    static func withHistory<Result: Sendable>(_ body: @escaping @Sendable (EventHistory) async throws -> Result) async throws -> Result {
        try await withDatabase(label: "storekeeper.events") { client, logger in
            try await body(EventHistory(client: client, queue: PostgresJobQueue(client: client, logger: logger), logger: logger))
        }
    }

    static func eventId(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw ValidationError("the event id must be a UUID, got \"\(text)\"") }
        return id
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Events, newest first: id, sequence, type, account, created.")
        @Option(help: "Only this account's.") var account: String?
        @Option(help: "Only events of this type (subscription.renewed), or of a family (credits.*); repeatable.") var type: [String] = []
        @Option(help: "At most this many.") var limit = 50
        @Flag(help: "Print each event as the JSON consumers receive, one per line.") var json = false

        func validate() throws {
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1...1000") }
            if let account, AccountID(account) == nil { throw ValidationError("--account must be \(AccountID.rule)") }
            _ = try types()
        }

        /// `--type` as a filter; every event when none is given.
        func types() throws -> EventTypeFilter {
            do { return type.isEmpty ? .all : try EventTypeFilter(type) } catch { throw ValidationError("--type: \(error)") }
        }

        func run() async throws {
            let (account, types, limit) = (self.account.flatMap(AccountID.init), try types(), self.limit)
            let events = try await EventsCommand.withHistory { try await $0.recent(account: account, types: types, limit: limit) }
            if json {
                for event in events { say(EventEnvelope.json(event)) }
                return
            }
            say("ID                                    SEQUENCE  TYPE                             ACCOUNT                              CREATED")
            for event in events {
                say(
                    event.id.uuidString.lowercased() + "  " + column(String(event.sequence), 9) + " "
                        + column(event.type, 32) + " "
                        + column(event.account, 36) + " "
                        + event.createdAt.formatted(.iso8601))
            }
            if events.isEmpty { say("(none)") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One event: its JSON, its deliveries and the delivery log.")
        @Argument(help: "The event id.") var id: String

        func run() async throws {
            let id = try EventsCommand.eventId(self.id)
            guard let detail = try await EventsCommand.withHistory({ try await $0.detail(id) }) else {
                throw CommandFailure("no event \(id.uuidString.lowercased())")
            }
            say(EventEnvelope.json(detail.event))
            say("")
            say("DELIVERIES")
            for delivery in detail.deliveries {
                let next = delivery.nextAttemptAt.map { " next " + $0.formatted(.iso8601) } ?? ""
                say("  \(delivery.endpoint): \(delivery.state.rawValue) after \(delivery.attempts) attempt(s)\(next)")
            }
            if detail.deliveries.isEmpty { say("  (no endpoint wants this type)") }
            say("ATTEMPTS")
            for attempt in detail.attempts {
                let status = attempt.statusCode.map(String.init) ?? "-"
                say(
                    "  \(attempt.attemptedAt.formatted(.iso8601))  \(attempt.endpoint)  status \(status)  \(attempt.latencyMilliseconds) ms  \(attempt.error ?? "")"
                )
            }
            if detail.attempts.isEmpty { say("  (none)") }
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an event again (delivered or failed) with a fresh retry schedule; `work` sends it.")
        @Argument(help: "The event id.") var id: String
        @Option(help: "Only to this endpoint.") var endpoint: String?

        func run() async throws {
            let id = try EventsCommand.eventId(self.id)
            let endpoint = self.endpoint
            let result = try await EventsCommand.withHistory { try await $0.redeliver(id, endpoint: endpoint) }
            guard let endpoints = result else { throw CommandFailure("no event \(id.uuidString.lowercased())") }
            guard !endpoints.isEmpty else {
                throw CommandFailure("event \(id.uuidString.lowercased()) has no delivery\(endpoint.map { " to \($0)" } ?? "")")
            }
            say("redelivering to \(endpoints.joined(separator: ", "))")
            try await CommandAudit.record(
                "event.redeliver", command: "events redeliver", target: id.uuidString.lowercased(), after: ["endpoints": endpoints])
        }
    }
}
