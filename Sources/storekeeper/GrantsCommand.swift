import Application
import ArgumentParser
import Credits
import Entitlements
import Events
import Foundation
import HTTPAPI
import Jobs
import Persistence
import StorekeeperRuntime
import Subscriptions

/// `storekeeper grants add|list|end`: operators' grants from the command line, with the admin API's rules and events.
struct GrantsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grants", abstract: "Grant a tier to an account, list its grants, end one (reads DATABASE_URL).",
        subcommands: [Add.self, List.self, End.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Grant a tier: for good (--lifetime), for a duration (--duration P30D) or until a time (--ends-at).")
        @Argument(help: "The account id.") var accountId: String
        @Option(help: "The catalogue tier to grant.") var tier: String
        @Option(help: "Why (at most 500 characters); kept with the grant.") var reason: String
        @Option(help: "ISO 8601 duration from now: P<n>D, P<n>W, P<n>M, P<n>Y.") var duration: String?
        @Option(help: "RFC 3339 end time.") var endsAt: String?
        @Flag(help: "For good.") var lifetime = false
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let account = try Self.account(accountId)
            guard [duration != nil, endsAt != nil, lifetime].filter({ $0 }).count == 1 else {
                throw CommandFailure("give exactly one of --duration, --ends-at or --lifetime")
            }
            let now = await operatorNow()
            let end: Date?
            do {
                end = try GrantEnd.date(endsAt: endsAt, duration: duration, now: now)
            } catch {
                // The API's field names are the command's options here.
                let message = error.description
                let option = message.hasPrefix("endsAt ") ? "--ends-at" : message.hasPrefix("duration ") ? "--duration" : nil
                throw CommandFailure(option.map { $0 + message.drop { $0 != " " } } ?? message)
            }
            let request = OperatorGrants.Request(tier: tier, endsAt: end, reason: reason, createdBy: "cli")
            let grant = try await withGrants(now: now) { grants, _ in
                do {
                    return try await grants.add(request, to: account, now: now).record
                } catch let refusal as OperatorGrants.Refusal {
                    throw CommandFailure(refusal.description)
                }
            }
            let line = GrantLine(grant, account: account, catalogue: try loadCatalogue(), now: now)
            if json {
                try printJSON(line)
            } else {
                say(
                    "granted \(grant.tier ?? "-") to \(account.text): grant \(grant.id), \(grant.endsAt.map { "until \($0.formatted(.iso8601))" } ?? "for good")"
                )
            }
            try await CommandAudit.record("grant.create", command: "grants add", account: account.text, target: grant.id, after: line)
        }

        static func account(_ text: String) throws -> AccountID {
            guard let account = AccountID(text) else { throw CommandFailure("the account id must be \(AccountID.rule), got \"\(text)\"") }
            return account
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An account's grants, newest first, ended ones too.")
        @Argument(help: "The account id.") var accountId: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let account = try Add.account(accountId)
            let now = await operatorNow()
            let catalogue = try loadCatalogue()
            let grants = try await withGrants(now: now) { grants, _ in try await grants.grants(of: account) }
            if json { return try printJSON(grants.map { GrantLine($0, account: account, catalogue: catalogue, now: now) }) }
            if grants.isEmpty { return say("no grants") }
            for grant in grants {
                let status = catalogue.source(of: grant, at: now).status.text
                let until = (grant.endedAt ?? grant.endsAt).map { $0.formatted(.iso8601) } ?? "for good"
                say("\(grant.id)  \(grant.tier ?? "-")  \(status)  \(grant.startsAt.formatted(.iso8601)) → \(until)  \(grant.reason ?? "")")
            }
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a grant now.")
        @Argument(help: "The grant id.") var grantId: String

        func run() async throws {
            guard let id = UUID(uuidString: grantId)?.uuidString.lowercased() else {
                throw CommandFailure("the grant id must be a UUID, got \"\(grantId)\"")
            }
            let now = await operatorNow()
            guard let (grant, account, ended) = try await withGrants(now: now, { grants, _ in try await grants.end(id, now: now) }) else {
                throw CommandFailure("no grant \(id)")
            }
            say(
                ended
                    ? "ended grant \(grant.id)"
                    : "grant \(grant.id) had ended already (\((grant.endedAt ?? grant.endsAt).map { $0.formatted(.iso8601) } ?? "-"))")
            guard ended else { return }
            // As the admin API notes it: the grant before and after (an erased account's grant has no account to name).
            let catalogue = try loadCatalogue()
            var before = grant
            (before.endedAt, before.endReason) = (nil, nil)
            try await CommandAudit.record(
                "grant.end", command: "grants end", account: account?.text, target: id,
                before: account.map { GrantLine(before, account: $0, catalogue: catalogue, now: now) },
                after: account.map { GrantLine(grant, account: $0, catalogue: catalogue, now: now) })
        }
    }

    /// A grant (or a one-time purchase, in `accounts show`) as the commands print it.
    struct GrantLine: Encodable {
        var id: String
        var kind: String
        var accountId: String
        var tier: String?
        var productId: String?
        var status: String
        var startsAt: Date
        var endsAt: Date?
        var endedAt: Date?
        var endReason: String?
        var reason: String?
        var createdBy: String?

        init(_ record: EntitlementRecord, account: AccountID, catalogue: TierCatalogue, now: Date) {
            let source = catalogue.source(of: record, at: now)
            (id, kind, accountId, tier, productId, status) = (
                record.id, source.kind.text, account.text, source.tier, record.productId, source.status.text
            )
            (startsAt, endsAt) = (record.startsAt, catalogue.clockEnd(of: record))
            (endedAt, endReason, reason, createdBy) = (record.endedAt, record.endReason?.text, record.reason, record.createdBy)
        }
    }
}

/// Runs `body` with the operator grants of the configured catalogue and webhooks on the operator's database: their
/// events are stored and delivered by `work` as any other. `now` is the operator's (``operatorNow()``): on a dev
/// database the dev clock's, and the jobs a grant schedules run at its instants, as the dev server's own do.
private func withGrants<Result: Sendable>(
    now: Date, _ body: @escaping @Sendable (OperatorGrants, CreditLedger) async throws -> Result
) async throws -> Result {
    let lead = now.timeIntervalSinceNow
    let catalogue = try loadCatalogue()
    let environment = ProcessInfo.processInfo.environment
    var webhooks: [WebhookEndpoint] = []
    if let text = environment["STOREKEEPER_WEBHOOKS"], !text.isEmpty {
        do { webhooks = try WebhookConfiguration.endpoints(from: text) } catch { throw CommandFailure(error.problems.joined(separator: "; ")) }
    }
    let endpoints = webhooks
    return try await withDatabase(label: "storekeeper.grants") { client, logger in
        let credits = CreditLedger(catalogue: catalogue, logger: logger)
        let queue = PostgresJobQueue(client: client, logger: logger)
        let events = EventRecorder(client: client, credits: credits, endpoints: endpoints, queue: queue, logger: logger)
        let scheduling: any JobScheduling = abs(lead) > 1 ? DevClockScheduling(queue: queue, offset: { lead }) : queue
        let settlement = SourceSettlement(credits: credits, recorder: events, queue: scheduling)
        return try await body(OperatorGrants(client: client, credits: credits, settlement: settlement, logger: logger), credits)
    }
}
