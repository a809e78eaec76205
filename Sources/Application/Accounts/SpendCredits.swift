import Credits
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StatementFencing
import Subscriptions

/// Spending credits (`POST /v1/accounts/{id}/usage`). Concurrent spends share a transaction (a ``CommitGroup``): it
/// locks their accounts, returns the first answer again to a repeated idempotency key, writes the grants due, takes
/// each amount in spend order (``SpendPlan``), all or nothing, and stores the answers. Spends of one account in a
/// group run in arrival order against the balances the earlier ones left, so together they never take more than there
/// is. Under load one commit and five round trips (BEGIN and COMMIT included) serve dozens of spends; a group the
/// database refuses is committed again one spend at a time. A first spend from an account reads its pages ahead while
/// it waits (``SpendReadAhead``).
public struct SpendCredits: Sendable {
    private let group: CommitGroup<Spend, UsageRequests.Answer>
    private let cache: AccountStatusCache?
    private let readAhead: SpendReadAhead

    /// One spend and the time it was asked at.
    struct Spend: Sendable {
        var request: UsageRequests.Request
        var now: Date
    }

    /// - Parameter executor: where the groups' transactions run (see ``CommitGroup``).
    public init(
        client: PostgresClient, ledger: CreditLedger, events: EventRecorder?, cache: AccountStatusCache? = nil,
        executor: (any TaskExecutor)? = nil, logger: Logger
    ) {
        let usageRequests = UsageRequests(logger: logger)
        let group = SpendGroup(ledger: ledger, usageRequests: usageRequests, events: events)
        self.group = CommitGroup(maximumBatch: 64, name: "spends", executor: executor) { spends in
            // Fenced: a connection closed under any of the group's statements (BEGIN, COMMIT and the answers' write are plain
            // queries) fails this group, not every later spend's wait.
            try await client.withFencedTransaction(logger: logger, onConnectionLoop: true) { try await group.spend(spends, on: $0) }
        }
        self.cache = cache
        self.readAhead = SpendReadAhead(client: client, usageRequests: usageRequests, logger: logger)
    }

    /// Spends `amount` of a meter: cycle credits first, then top-ups; all or nothing.
    public func spend(_ request: UsageRequests.Request, now: Date) async throws -> UsageRequests.Answer {
        // After the commit (or the rollback): the next status read of this process sees the spend.
        defer { cache?.invalidate(request.account) }
        let reading = readAhead.start(for: request, now: now)
        defer { reading?.cancel() }
        return try await group.submit(Spend(request: request, now: now))
    }
}

/// The statements of one group of spends, on its transaction.
private struct SpendGroup: Sendable {
    let ledger: CreditLedger
    let usageRequests: UsageRequests
    let events: EventRecorder?

    func spend(_ spends: [SpendCredits.Spend], on connection: PostgresConnection) async throws -> [UsageRequests.Answer] {
        // The group's spends happen at its commit: the latest time any of them was asked at.
        let now = spends.map(\.now).max() ?? Date()
        let requests = spends.map(\.request)
        var stored = try await usageRequests.lockAccountsAndReadAnswers(requests, on: connection)
        let spending = requests.filter { stored[$0.key] == nil }.map(\.account)
        guard !spending.isEmpty else { return requests.map { stored[$0.key]!.answer(to: $0) } }
        let credits = try await Spendable.read(of: spending, now: now, ledger: ledger, on: connection)
        var balances = credits.mapValues(\.live)
        var drafts: [EventDraft] = credits.sorted { $0.key.text < $1.key.text }.flatMap { account, spendable in
            spendable.openedWindows(account: account)
        }
        var answers: [UsageRequests.Answer] = []
        var fresh: [UsageRequests.FirstAnswer] = []
        for request in requests {
            if let previous = stored[request.key] {
                answers.append(previous.answer(to: request))
                continue
            }
            let answer: UsageRequests.Answer
            var debits: [(bucket: String, amount: Int64)] = []
            let spending = Spending.spend(
                request.amount, of: request.meter, unlimited: credits[request.account]?.credits.meters[request.meter]?.unlimited == true,
                from: balances[request.account] ?? [])
            switch spending {
            case .unlimited:
                answer = UsageRequests.Answer(outcome: .spent, meter: request.meter, remaining: nil)
            case .spent(let plan, let remaining, let after):
                debits = plan.debits
                balances[request.account] = after
                answer = UsageRequests.Answer(outcome: .spent, meter: request.meter, remaining: remaining)
                // Named by the spend's key and time: a key used again after the idempotency window is another spend.
                drafts += CreditChanges.depleted(
                    meter: request.meter, remaining: remaining, account: request.account,
                    spendKey: UsageRequests.debitKeyPrefix(
                        account: request.account, idempotencyKey: request.idempotencyKey, micros: UsageRequests.micros(at: now)),
                    environment: credits[request.account]?.environment ?? .production)
                drafts +=
                    credits[request.account]?.warnings(
                        request.meter, from: remaining + request.amount, to: remaining, account: request.account, catalogue: ledger.catalogue) ?? []
            case .insufficient(let available):
                answer = UsageRequests.Answer(
                    outcome: .insufficientCredits, meter: request.meter, remaining: available, error: "insufficient_credits",
                    message: "\(request.amount) \(request.meter) requested, \(available) left; nothing was deducted")
            }
            stored[request.key] = UsageRequests.StoredAnswer(meter: request.meter, amount: request.amount, answer: answer)
            fresh.append(UsageRequests.FirstAnswer(answer: answer, request: request, debits: debits))
            answers.append(answer)
        }
        try await usageRequests.store(fresh, at: now, on: connection)
        try await events?.record(drafts, now: now, on: connection)
        return answers
    }
}
