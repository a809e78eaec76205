import Application
import ArgumentParser
import Credits
import Foundation
import HTTPAPI
import Jobs
import Persistence
import StorekeeperRuntime
import Subscriptions

struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts", abstract: "Look at accounts (reads DATABASE_URL).", subcommands: [Show.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An account's status (as the API answers it), subscriptions, grants and one-time purchases, events, archive and transfers.")
        @Argument(help: "The account id (the app's own id, or the appAccountToken UUID).") var accountId: String
        @Flag(help: "Print JSON.") var json = false

        struct Report: Encodable, Sendable {
            var status: AccountStatusResponse
            var subscriptions: [SubscriptionDetailResponse]
            /// Grants and one-time purchases, ended ones too, newest first.
            var sources: [GrantsCommand.GrantLine]
            /// What the stores sent about this account's subscriptions (App Store notifications, Stripe events, Google Play's
            /// notifications about any token of the subscription), newest first.
            var events: [AccountRecords.Event]
            /// How many events Storekeeper keeps for the app's services about the account (`events list --account`).
            var sentEvents: Int
            var archive: [AccountRecords.ArchiveEntry]
            var transfers: [AccountRecords.Transfer]
            var ledger: [AccountRecords.LedgerEntry]
            var refundRequests: [RefundRequestQuery.Listed]
        }

        func run() async throws {
            guard let account = AccountID(accountId) else {
                throw CommandFailure("the account id must be \(AccountID.rule), got \"\(accountId)\"")
            }
            let now = await operatorNow()
            let catalogue = try loadCatalogue()
            // What an open refund request would be answered follows the policy: this command's STOREKEEPER_REFUND_POLICY,
            // as `serve` reads its own (set it alike), else the default.
            let policy: RefundPolicy
            do { policy = try RefundPolicy.configured(in: ProcessInfo.processInfo.environment) } catch {
                throw CommandFailure(error.problems.joined(separator: "; "))
            }
            let report = try await withDatabase(label: "storekeeper.accounts") { client, logger in
                let ledger = CreditLedger(catalogue: catalogue, logger: logger)
                let standing = try await AccountStatusQuery(client: client, ledger: ledger, logger: logger).status(of: account, now: now)
                let states = standing.subscriptions
                let records = AccountRecords(client: client, logger: logger)
                return Report(
                    status: AccountStatusResponse(accountId: account, standing: standing, now: now),
                    subscriptions: states.map { SubscriptionDetailResponse(state: $0, now: now) },
                    sources: try await client.withFencedConnection { try await EntitlementSources(logger: logger).sources(of: account, on: $0) }
                        .map { GrantsCommand.GrantLine($0, account: account, catalogue: catalogue, now: now) },
                    events: try await records.events(ofSubscriptions: states.map(\.originalTransactionId), account: account),
                    sentEvents: try await records.eventCount(ofAccount: account),
                    archive: try await records.archive(ofAccount: account),
                    transfers: try await records.transfers(ofAccount: account),
                    ledger: try await records.ledger(ofAccount: account),
                    refundRequests: try await RefundRequestQuery(client: client, credits: ledger, policy: policy, answering: nil, logger: logger)
                        .requests(ofAccount: account, limit: 50, now: now))
            }
            // An id never seen is most often a mistyped one: a failure, not a page of the free tier's status (which the
            // API answers for any id).
            if report.subscriptions.isEmpty && report.sources.isEmpty && report.events.isEmpty && report.sentEvents == 0 && report.ledger.isEmpty
                && report.archive.isEmpty && report.transfers.isEmpty && report.refundRequests.isEmpty
            {
                throw CommandFailure(
                    "nothing is stored for account \(account.text): is the id right? (the API answers any id with the free tier's status)")
            }
            if json { return try printJSON(report) }
            say("status")
            try printJSON(report.status)
            say("\nsubscriptions (\(report.subscriptions.count))")
            for subscription in report.subscriptions { try printJSON(subscription) }
            say("\ngrants and one-time purchases, newest first (\(report.sources.count))")
            for source in report.sources {
                let until = (source.endedAt ?? source.endsAt).map { $0.formatted(Date.ISO8601FormatStyle()) } ?? "for good"
                say(
                    "  \(source.kind)  \(source.id)  \(source.tier ?? source.productId ?? "-")  \(source.status)  \(source.startsAt.formatted(Date.ISO8601FormatStyle())) → \(until)  \(source.reason ?? "")"
                )
            }
            say("\nfrom the stores, newest first (\(report.events.count))")
            for event in report.events {
                let type = event.type + (event.subtype.map { "/\($0)" } ?? "")
                say(
                    "  \(event.signedDate.formatted(Date.ISO8601FormatStyle()))  \(event.originalTransactionId)  "
                        + column(type, 44) + " \(event.outcomeText)  \(event.id)")
            }
            say(
                "\nevents kept for the app's services: \(report.sentEvents) (storekeeper events list --account \(account.text); webhook endpoints and GET /v1/events read them)"
            )
            say("\narchive (\(report.archive.count))")
            for entry in report.archive {
                say(
                    "  \(entry.originalTransactionId)  \(entry.reason)  \(entry.productId)  ended \(JobsCommand.format(entry.endedAt))"
                        + (entry.reinstatedAt.map { "  reinstated \($0.formatted(Date.ISO8601FormatStyle()))" } ?? ""))
            }
            say("\ntransfers (\(report.transfers.count))")
            for transfer in report.transfers {
                say(
                    "  \(transfer.transferredAt.formatted(Date.ISO8601FormatStyle()))  \(transfer.originalTransactionId)  "
                        + "\(transfer.fromAccount.uuidString.lowercased()) → \(transfer.toAccount.uuidString.lowercased())")
            }
            say("\nrefund requests, newest first (\(report.refundRequests.count))")
            for listed in report.refundRequests {
                let request = listed.request
                let answer =
                    request.sentAnswer?.summary ?? request.lastError ?? listed.answerPreview.map { "would answer \($0.summary)" } ?? "not answered"
                say(
                    "  \(request.requestedAt.formatted(Date.ISO8601FormatStyle()))  \(request.transactionId)  \(request.productId)  "
                        + "\(request.reason ?? "-")  \(request.state.rawValue)  \(answer)  Apple: \(request.outcome ?? "undecided")"
                        // The id the app's own answer is put to (`PUT /v1/refund-requests/{id}/answer`).
                        + "  request \(request.id.uuidString.lowercased())")
            }
            say("\nledger, newest first (\(report.ledger.count))")
            for entry in report.ledger {
                let delta = entry.delta > 0 ? "+\(entry.delta)" : "\(entry.delta)"
                say(
                    "  \(entry.at.formatted(Date.ISO8601FormatStyle()))  \(column(entry.meter, 14)) "
                        + column(delta, 8) + " \(column(entry.reason, 22)) \(entry.operationKey)")
            }
        }
    }
}
