import Application
import ArgumentParser
import Credits
import Events
import Foundation
import Jobs
import Persistence
import PostgresNIO
import StorekeeperRuntime
import StripeStore
import Subscriptions
import Synchronization

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Derive subscriptions again from their stored signed facts and report any difference.",
        discussion: """
            Every stored notification, claim and Server API snapshot keeps its signed data, so a subscription can be \
            derived again at any time; a Stripe subscription is derived from the Stripe objects held for it (no call to \
            Stripe), with STOREKEEPER_STRIPE_GRACE_DAYS as `work` reads it; a Play subscription from the reads of its \
            token chain (no call to Google). --all skips the ids of one-time purchases \
            (consumables, lifetime unlocks, passes) and counts them. Without --write nothing is written: each difference of state and each ledger \
            operation still due is reported. With --write the derived state is stored and the operations posted as \
            corrections with their own keys (no ledger row is rewritten); safe to run twice and while serving. \
            Exit status: 0 when everything matches (or --write stored it), 3 when something differs, 1 on errors.
            """)

    @Option(help: "Every subscription of this account.") var account: String?
    @Option(help: "One subscription (originalTransactionId).") var subscription: String?
    @Flag(help: "Every subscription with stored facts.") var all = false
    @Flag(help: "Store the derived states and archive, and post every credit operation still due.") var write = false
    @Option(help: "Subscriptions derived at once (1–16), each on its own connection.") var parallel = 4

    func validate() throws {
        guard [account != nil, subscription != nil, all].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --account ID, --subscription OTID or --all")
        }
        guard (1...16).contains(parallel) else { throw ValidationError("--parallel must be 1 to 16, got \(parallel)") }
        if let subscription, subscription.isEmpty || subscription.utf8.count > 256 {
            throw ValidationError("--subscription must be an original transaction id (Apple's digits or Stripe's sub_…)")
        }
        if let account, AccountID(account) == nil {
            throw ValidationError("--account must be \(AccountID.rule), got \"\(account)\"")
        }
    }

    /// The key erased ids are recognised by: `STOREKEEPER_ERASURE_KEY`, or in a `storekeeper dev` folder working on its
    /// database, the dev database's. The stored facts of an erased account's purchases may still name its id (Apple
    /// signs it on every renewal, Stripe's metadata keeps it): the server files them under the pseudonym, and a replay
    /// without the key would give them back to the id. So with erasures on record and no key, replay refuses, and with
    /// a key other than the one they were filed under (sql/0067's fingerprint) too.
    static func erasureKey(on client: PostgresClient) async throws -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let key = environment["STOREKEEPER_ERASURE_KEY"], !key.isEmpty { return key }
        let dev = DevEnvironment()
        if environment["DATABASE_URL", default: ""].isEmpty || environment["DATABASE_URL"] == dev.settings()["DATABASE_URL"],
            let key = dev.existingErasureKey()
        {
            return key
        }
        let erasures = try await client.fencedQuery("SELECT count(*)::bigint FROM erased_accounts").decode(Int.self).reduce(0, +)
        guard erasures == 0 else {
            throw CommandFailure(
                "STOREKEEPER_ERASURE_KEY is not set and \(erasures) account(s) were erased: without the key the server uses, replay cannot tell their ids in the stored facts and would give their purchases back to them"
            )
        }
        return nil
    }

    func run() async throws {
        let now = Date()
        let write = self.write
        let account = self.account.flatMap(AccountID.init)
        let single = subscription
        let all = self.all
        let parallel = self.parallel
        let catalogue = try loadCatalogue()
        let stripeSettings = StripeDerivation.Settings(graceDays: try Self.stripeGraceDays(), catalogue: catalogue)
        // Every subscription of a large app takes a while (a million: hours); one account or subscription, a moment.
        // The subscriptions written so far, for the audit log should the replay fail part way.
        let written = Written()
        let report: Report
        do {
            report = try await withDatabase(
                label: "storekeeper.replay", timeout: all ? .seconds(12 * 3600) : .seconds(60), connections: parallel + 1
            ) { client, logger in
                let ids: [String]
                if all {
                    ids = try await client.withFencedConnection { try await SubscriptionHistory(logger: logger).subscriptionIds(on: $0) }
                } else if let account {
                    ids = try await SubscriptionStore(client: client, logger: logger).subscriptions(forAccount: account)
                        .map(\.originalTransactionId)
                } else {
                    ids = single.map { [$0] } ?? []
                }
                let credits = CreditLedger(catalogue: catalogue, logger: logger)
                let erased = ErasedAccounts(secret: try await Self.erasureKey(on: client), logger: logger)
                // A key other than the erasures' recognises none of them, as no key would (and is not recorded as theirs).
                try await client.withFencedConnection { try await erased.confirmKey(recording: false, at: now, on: $0) }
                let queue = PostgresJobQueue(client: client, logger: logger)
                let writer = SubscriptionWriter(
                    credits: credits, queue: queue, rechecks: nil, events: nil, analytics: AnalyticsRollups(logger: logger),
                    erased: erased, logger: logger)
                let appStoreSubscriptions = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
                let stripe = StripeSubscriptions(
                    client: client, stripe: nil, writer: writer, settings: stripeSettings, clock: { now }, logger: logger)
                let store = SubscriptionStore(client: client, logger: logger)
                let play = GooglePlaySubscriptions(
                    client: client, play: nil, writer: writer, queue: queue, catalogue: catalogue, erased: erased, clock: { now }, logger: logger)
                @Sendable func replay(_ id: String) async throws -> Replayed {
                    let (derived, isPlay) = try await client.withFencedTransaction(logger: logger) {
                        connection -> (SubscriptionWriter.Outcome?, Bool) in
                        // A Play subscription's facts are the reads of its token chain (no call is made here). Its store is
                        // read before any lock (it never changes): Play's derivation locks the chain's tokens before the
                        // subscription, as a notification's does, so taking the subscription's lock first could deadlock.
                        if try await store.lockedSubscription(id, on: connection, lockHeld: true)?.store == .googlePlay {
                            let outcomes = try await play.derive(
                                chainOf: id, cause: EventCause(originalTransactionId: id), write: write, on: connection)
                            return (outcomes.first { ($0.state ?? $0.stored)?.originalTransactionId == id }, true)
                        }
                        let appStore =
                            if write {
                                try await appStoreSubscriptions.rederive(id, now: now, on: connection)
                            } else {
                                try await appStoreSubscriptions.preview(id, now: now, on: connection)
                            }
                        // A Stripe subscription's facts are the objects read from Stripe (no call is made here): one stored
                        // as Stripe's, or one with no row whose objects are held.
                        guard appStore.stored?.store == .stripe || appStore.stored == nil else { return (appStore, false) }
                        let derived = try await stripe.derive(
                            id, cause: EventCause(originalTransactionId: id), lockHeld: true, write: write, on: connection)
                        // Nothing held and nothing stored: an unknown id, answered as any other.
                        return (derived ?? (appStore.stored == nil ? appStore : nil), false)
                    }
                    guard let outcome = derived else {
                        // Stored as a Play subscription whose chain has no read held, or a Stripe one none of whose objects is:
                        // nothing to derive it from.
                        if isPlay {
                            return .subscription(
                                id, ["google_play: no read of its purchase tokens is held; `storekeeper google sync` reads them again"])
                        }
                        return .subscription(id, ["stripe: no Stripe subscription object is held for it; `storekeeper stripe sync` reads it again"])
                    }
                    guard outcome.stored != nil || outcome.state != nil else {
                        // Facts that derive no subscription: a consumable, a lifetime unlock or a pass (ONE_TIME_CHARGE and
                        // its REFUND), which share the notifications' original transaction id column.
                        guard all else {
                            throw CommandFailure("no subscription \(id): nothing stored derives one (a one-time purchase's id, or an unknown one)")
                        }
                        return .oneTimePurchase
                    }
                    let account = (outcome.state?.accountId ?? outcome.stored?.accountId).map { "account \($0)" } ?? "no account"
                    let differences =
                        try Self.differences(outcome.stored, outcome.state) + outcome.operations.map { "ledger (\(account)): \(Self.describe($0))" }
                    if write, !differences.isEmpty { written.ids.withLock { $0.append(id) } }
                    return .subscription(id, differences)
                }
                // Subscriptions are independent (each derived in its own transaction under its own lock): several at once
                // keep PostgreSQL busy while this process derives (a million: about half the time of one at a time).
                let lanes = max(1, min(parallel, ids.count))
                let found = try await withThrowingTaskGroup(of: [(Int, Replayed)].self) { group in
                    for lane in 0..<lanes {
                        group.addTask {
                            var found: [(Int, Replayed)] = []
                            for index in stride(from: lane, to: ids.count, by: lanes) {
                                found.append((index, try await replay(ids[index])))
                            }
                            return found
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.0 < $1.0 }.map(\.1)
                }
                var report = Report()
                for replayed in found {
                    switch replayed {
                    case .subscription(let id, let differences): report.subscriptions.append((id, differences))
                    case .oneTimePurchase: report.oneTimePurchases += 1
                    }
                }
                return report
            }
        } catch let failure {
            // Subscriptions written before the failure stay written: the log names them, status 1. A failure before any
            // was written (an unknown id, no erasure key, no database) changed nothing and is not logged.
            let before = written.ids.withLock { $0 }
            guard !before.isEmpty else { throw failure }
            do {
                try await CommandAudit.record(
                    "replay.write", command: "replay --write", status: 1, account: account?.text, target: single ?? (all ? "all" : nil),
                    after: ["subscriptions": before])
            } catch let unaudited {
                throw CommandFailure(
                    "\(CommandFailure.describe(failure)) after writing \(before.count) subscription(s), and \(CommandFailure.describe(unaudited))")
            }
            throw failure
        }
        if report.oneTimePurchases > 0 {
            say("\(report.oneTimePurchases) original transaction id(s) of one-time purchases only (no subscription to derive) skipped")
        }
        if report.subscriptions.isEmpty { return say(all ? "no subscriptions" : "no subscriptions for that account") }
        var differing = 0
        for (id, differences) in report.subscriptions {
            if differences.isEmpty {
                say("\(id): matches its stored facts")
            } else {
                differing += 1
                say("\(id): differs from its stored facts\(write ? " — derived state stored, operations posted" : ""):")
                for difference in differences { say("  \(difference)") }
            }
        }
        if differing > 0, write {
            // The subscriptions written, not what differed: the differences' text names accounts, which an erasure
            // rewrites only where a whole value is the id.
            try await CommandAudit.record(
                "replay.write", command: "replay --write", account: account?.text, target: subscription ?? (all ? "all" : nil),
                after: ["subscriptions": report.subscriptions.filter { !$0.1.isEmpty }.map(\.0)])
        }
        if differing > 0, !write {
            say(
                "\(differing) of \(report.subscriptions.count) subscriptions differ (derived with the tier catalogue \(catalogueFile()) and STOREKEEPER_STRIPE_GRACE_DAYS=\(try Self.stripeGraceDays()): the server's own?); run again with --write to store the derived state and post the operations"
            )
            throw ExitCode(3)
        }
    }

    /// What replaying one id found.
    enum Replayed: Sendable {
        case subscription(String, [String])
        case oneTimePurchase
    }

    /// What a replay found: each subscription with its differences, and how many ids derived no subscription.
    struct Report: Sendable {
        var subscriptions: [(String, [String])] = []
        var oneTimePurchases = 0
    }

    /// `STOREKEEPER_STRIPE_GRACE_DAYS` as `work` reads it (a replay with another grace would report false differences).
    static func stripeGraceDays() throws -> Int {
        // Trimmed and defaulted as `StorekeeperConfiguration` reads it.
        guard let text = ProcessInfo.processInfo.environment["STOREKEEPER_STRIPE_GRACE_DAYS"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty
        else { return 3 }
        guard let days = Int(text), (0...60).contains(days) else {
            throw CommandFailure("STOREKEEPER_STRIPE_GRACE_DAYS must be an integer in 0...60, got \"\(text)\"")
        }
        return days
    }

    /// One ledger operation still due, as a line.
    static func describe(_ operation: LedgerOperation) -> String {
        switch operation {
        case .post(let entry, _): return "\(entry.operationKey) \(entry.delta > 0 ? "+" : "")\(entry.delta) (\(entry.reason))"
        case .setWindowEnd(let bucket, let end): return "window of \(bucket) ends \(end.map { $0.formatted(.iso8601) } ?? "never")"
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

/// The subscriptions a `replay --write` wrote, shared by its lanes.
private final class Written: Sendable {
    let ids = Mutex<[String]>([])
}
