import Analytics
import Credits
import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// The one code path that saves a subscription derived from its store's facts — the App Store's
/// (``AppStoreSubscriptions``), Stripe's or Google Play's — inside the caller's transaction holding its lock: save the
/// state, follow its owner, sync the archive, post the credit operations still due, schedule what comes next (the next
/// credit window, a late-renewal recheck) and store the events of the change. Three use cases, no modes: ``save``,
/// ``change`` (its events left for the caller's last statement) and ``preview`` (nothing written).
public struct SubscriptionWriter: Sendable {
    /// What deriving a subscription changed.
    public struct Outcome: Sendable {
        public enum Kind: String, Sendable {
            /// The state or the ledger changed.
            case applied
            /// The facts already said everything the event says.
            case unchanged
        }

        public var kind: Kind
        public var state: SubscriptionState?
        public var stored: SubscriptionState?
        public var operations: [LedgerOperation]
    }

    /// A saved change and its events, not stored yet: the caller stores them with its own last write.
    public struct Change: Sendable {
        public var outcome: Outcome
        /// `nil` where no events are kept (no recorder).
        public var events: EventRecorder.Pending?
    }

    private let history: SubscriptionHistory
    private let archive: SubscriptionArchive
    /// Remembers each token's answer for the writer's derivations (and the apply job's lookups).
    public let purchaseIntents: PurchaseIntents
    private let credits: CreditLedger
    private let queue: any JobScheduling
    private let rechecks: RenewalRechecks?
    /// Stores the events of each change; `nil` stores none.
    public let recorder: EventRecorder?
    /// Keeps the analytics rollups up to date with each derivation; `nil` keeps none.
    private let analytics: AnalyticsRollups?
    /// Erased accounts' pseudonyms, under which facts that still name them are filed.
    private let erased: ErasedAccounts
    private let logger: Logger

    /// - Parameters:
    ///   - rechecks: schedules late-renewal rechecks; `nil` when the App Store Server API is not configured.
    ///   - events: stores the events of each change; `nil` stores none.
    ///   - analytics: the rollups each derivation's contribution is recorded in; `nil` records none.
    public init(
        credits: CreditLedger, queue: any JobScheduling, rechecks: RenewalRechecks?, events: EventRecorder?,
        analytics: AnalyticsRollups? = nil, erased: ErasedAccounts, logger: Logger
    ) {
        self.analytics = analytics
        self.history = SubscriptionHistory(logger: logger)
        self.archive = SubscriptionArchive(logger: logger)
        self.purchaseIntents = PurchaseIntents(erased: erased, logger: logger)
        self.erased = erased
        self.credits = credits
        self.queue = queue
        self.rechecks = rechecks
        self.recorder = events
        self.logger = logger
    }

    /// Records a one-time sale's revenue in the analytics rollups (when kept), on the caller's transaction: the
    /// sale's whole contribution, so recording the same facts again changes nothing.
    public func recordSale(_ sale: OneTimeSale, on connection: PostgresConnection) async throws {
        guard let analytics else { return }
        try await analytics.record(PurchaseAnalytics.contribution(of: sale), ofSubscription: PurchaseAnalytics.key(of: sale), on: connection)
    }

    /// Saves `derivation` (its stored state `stored`) and stores the change's events.
    public func save(
        _ derivation: Lifecycle.Derivation, stored: SubscriptionState?, cause: EventCause, anyRevocation: Bool = false, now: Date,
        on connection: PostgresConnection
    ) async throws -> Outcome {
        var alone: CreditLedger.DeferredPosts?
        return try await store(
            try await change(derivation, stored: stored, cause: cause, anyRevocation: anyRevocation, now: now, deferring: &alone, on: connection),
            on: connection)
    }

    /// Stores the events of `change` (made by ``change(_:stored:cause:anyRevocation:now:deferring:on:)``) and returns its outcome.
    public func store(_ change: Change, on connection: PostgresConnection) async throws -> Outcome {
        if let events = change.events { try await recorder?.record(events, on: connection) }
        return change.outcome
    }

    /// What saving `derivation` would change: the credit operations due and whether the state moves; nothing is
    /// written and no account's lock is taken (`replay --dry-run`; the caller holds the subscription's).
    public func preview(_ derivation: Lifecycle.Derivation, stored: SubscriptionState?, now: Date, on connection: PostgresConnection) async throws
        -> Outcome
    {
        var derivation = derivation
        // As a save files it (its facts are not rewritten here).
        if let (_, pseudonym) = try await erasedOwner(of: derivation, stored: stored, on: connection) {
            derivation.state.accountId = pseudonym
        }
        let state = derivation.state
        var ledger = try await credits.snapshot(ofSubscription: state.originalTransactionId, account: state.accountId, now: now, on: connection)
        try await credits.noteTakenElsewhere(for: derivation, storedOwner: stored?.accountId, in: &ledger, on: connection)
        let operations = SubscriptionCredits.operationsDue(derivation, catalogue: credits.catalogue, ledger: ledger, now: now)
        let changed = state != stored || !operations.isEmpty
        return Outcome(kind: changed ? .applied : .unchanged, state: state, stored: stored, operations: operations)
    }

    /// Saves `derivation` as ``save(_:stored:cause:anyRevocation:now:on:)`` does, but returns the change's events instead
    /// of storing them: the apply jobs of a transaction store them in its last statement, which completes them.
    ///
    /// With `posts` (the applies of a shared transaction), a change whose owner's status is known without a read leaves
    /// its credit posts there for the caller to flush (``CreditLedger/DeferredPosts``), and any change first flushes
    /// the posts of the accounts it reads or writes.
    public func change(
        _ derivation: Lifecycle.Derivation, stored: SubscriptionState?, cause: EventCause, anyRevocation: Bool = false, now: Date,
        deferring posts: inout CreditLedger.DeferredPosts?, on connection: PostgresConnection
    ) async throws -> Change {
        var derivation = derivation
        let saved: CreditLedger.DerivationSnapshot
        if stored?.accountId == nil {
            // Nothing is locked before the save's statement: it asks whether a new owner was erased itself, and on
            // finding it so writes nothing, and the derivation is saved again under the pseudonym.
            let digests = derivation.ownerClaimed ? [] : derivation.state.accountId.map(erased.digests(of:)) ?? []
            let first = try await saveAndSnapshot(derivation, stored: stored, erasedDigests: digests, now: now, deferring: &posts, on: connection)
            if let account = derivation.state.accountId, let pseudonym = first.erasedAs {
                try await fileUnderPseudonym(&derivation, of: account, pseudonym, on: connection)
                saved = try await saveAndSnapshot(derivation, stored: stored, now: now, deferring: &posts, on: connection)
            } else {
                saved = first
            }
        } else {
            // With an owner stored: when it changes hands both owners are locked before the save, in order, so a new
            // owner's erasure is asked first and the lock taken is its pseudonym's.
            if let (account, pseudonym) = try await erasedOwner(of: derivation, stored: stored, on: connection) {
                try await fileUnderPseudonym(&derivation, of: account, pseudonym, on: connection)
            }
            saved = try await saveAndSnapshot(derivation, stored: stored, now: now, deferring: &posts, on: connection)
        }
        let state = derivation.state
        let originalTransactionId = state.originalTransactionId
        let catalogue = credits.catalogue
        var ledger = saved.ledger
        try await credits.noteTakenElsewhere(for: derivation, storedOwner: stored?.accountId, in: &ledger, on: connection)
        let operations = SubscriptionCredits.operationsDue(derivation, catalogue: catalogue, ledger: ledger, now: now)
        let changed = state != stored || !operations.isEmpty
        if state != stored {
            if let from = stored?.accountId, let to = state.accountId, from != to {
                try await history.recordTransfer(originalTransactionId, from: from, to: to, on: connection)
                logger.notice(
                    "subscription transferred",
                    metadata: ["subscription.id": "\(originalTransactionId)", "account.from": "\(from)", "account.to": "\(to)"])
            }
        }
        if state.store == .appStore { try await archive.sync(derivation.ends, state: state, anyRevocation: anyRevocation, on: connection) }
        // A rescinded consent seen before any subscription named its app transaction and account is linked when one
        // first does — asked only then, so an apply to the same owner costs nothing more. Only where its event can be
        // sent (`replay` sends none): otherwise the `consent-link` job links it, with its event.
        var rescinded: [ConsentRescissions.Rescission] = []
        if recorder != nil, let appTransactionId = state.appTransactionId, let account = state.accountId,
            appTransactionId != stored?.appTransactionId || account != stored?.accountId
        {
            rescinded = try await ConsentRescissions(logger: logger).link(
                appTransactionId: appTransactionId, environment: state.environment, to: account, now: now, on: connection)
        }
        var drafts: [EventDraft] = []
        if recorder != nil {
            drafts = SubscriptionChanges.events(from: stored, to: state, catalogue: credits.catalogue, cause: cause)
            drafts += rescinded.compactMap(\.event)
            if let account = state.accountId {
                drafts += CreditChanges.granted(
                    operations, account: account, subscription: originalTransactionId, environment: state.environment, cause: cause)
            }
        }
        // The events carry their accounts' statuses as this transaction leaves them: read with the posts, the last
        // write they depend on — or, for an owner whose only subscription this is and whose buckets the snapshot holds
        // (sql/0054), known from the state, the snapshot and what the posts wrote, without reading them again.
        // With others' posts waiting, such an owner's are left to wait with them: one round trip posts them all.
        let known = knownOwner(of: state, stored: stored, saved: saved, operations: operations, drafts: drafts, now: now)
        var statuses: [AccountID: CreditLedger.StatusInputs] = [:]
        let posted: Set<String>
        if let known, var waiting = posts {
            posted = try await credits.deferPosting(operations, of: known, at: now, into: &waiting, on: connection)
            posts = waiting
        } else {
            let reading = known == nil ? drafts.map(\.account) : []
            try await credits.flush(&posts, touching: reading, on: connection)
            let posting = try await credits.post(operations, readingStatusOf: reading, at: now, on: connection)
            (statuses, posted) = (posting.statuses, posting.posted)
        }
        if let known { statuses[known] = .after(state, of: known, in: ledger, posting: operations, posted: posted, at: now) }
        try await scheduleNextWindow(derivation, now: now, on: connection)
        if state.store == .appStore { try await rechecks?.schedule(for: state, now: now, on: connection) }
        let outcome = Outcome(kind: changed ? .applied : .unchanged, state: state, stored: stored, operations: operations)
        if let account = state.accountId, let after = statuses[account] {
            drafts += overlaps(after: after, stored: stored, state: state, account: account, now: now, cause: drafts.first?.cause)
        }
        return Change(outcome: outcome, events: recorder.map { _ in EventRecorder.Pending(drafts: drafts, statuses: statuses, now: now) })
    }

    /// Files `derivation` under the pseudonym of its erased owner `account`; the notification that named it is stored
    /// already, so its facts are rewritten as the erasure's were.
    private func fileUnderPseudonym(
        _ derivation: inout Lifecycle.Derivation, of account: AccountID, _ pseudonym: AccountID, on connection: PostgresConnection
    ) async throws {
        derivation.state.accountId = pseudonym
        logger.notice(
            "a fact names an erased account: filed under its pseudonym",
            metadata: ["subscription.id": "\(derivation.state.originalTransactionId)", "account.pseudonym": "\(pseudonym)"])
        _ = try await erased.rewriteSignedFacts(of: [derivation.state.originalTransactionId], from: account, to: pseudonym, on: connection)
    }

    /// Takes the owners' locks, saves `derivation` and reads its owner's ledger (``CreditLedger/snapshot(savingDerivation:now:on:)``),
    /// first flushing the waiting posts of the accounts it touches; with `erasedDigests`, the same statement looks the
    /// owner up as erased, and writes nothing if it was (``CreditLedger/DerivationSnapshot/erasedAs``).
    private func saveAndSnapshot(
        _ derivation: Lifecycle.Derivation, stored: SubscriptionState?, erasedDigests: [String] = [], now: Date,
        deferring posts: inout CreditLedger.DeferredPosts?, on connection: PostgresConnection
    ) async throws -> CreditLedger.DerivationSnapshot {
        let state = derivation.state
        try await credits.flush(&posts, touching: [state.accountId, stored?.accountId], on: connection)
        // Credit rules read balances that spends change: the owner's account is locked first, as spends lock it.
        // A change saves the state in the snapshot's round trip. A subscription that changes hands changes what the
        // owner before can spend too (its cycle buckets): both are locked, in byte order as spend groups lock theirs
        // (the snapshot takes the new owner's again, which it holds already).
        if let before = stored?.accountId, before != state.accountId {
            for account in Set([before] + [state.accountId].compactMap { $0 }).sorted() {
                try await credits.lockAccount(account, on: connection)
            }
        }
        // Every derivation records its contribution, not only a changed state: a refund of an old period changes the
        // figures, not the state. A new period in force makes its transaction ids (and any earlier ones not filed
        // yet) searchable. Both are written in the snapshot's round trip, with the state when it changed.
        let catalogue = credits.catalogue
        let contribution = analytics.map { _ in
            SubscriptionAnalytics.contribution(of: derivation) { productId in
                catalogue.tier(ofProduct: productId)?.product.billingPeriod.map { MonthlyValue.Length(months: $0.months, days: $0.days) }
            }
        }
        return try await credits.snapshot(
            savingDerivation: .init(
                originalTransactionId: state.originalTransactionId, account: state.accountId, state: state != stored ? state : nil,
                transactionIds: state.latestTransactionId != stored?.latestTransactionId ? derivation.transactionIds : [],
                contribution: contribution, erasedDigests: erasedDigests),
            now: now, on: connection)
    }

    /// The owner whose status the events carry, when it is known without a read: the only account the events name,
    /// the subscription's owner before as after, with nothing the snapshot does not show
    /// (``CreditLedger/StatusInputs/after(_:of:in:posting:posted:at:)``); `nil` when the statuses must be read.
    private func knownOwner(
        of state: SubscriptionState, stored: SubscriptionState?, saved: CreditLedger.DerivationSnapshot, operations: [LedgerOperation],
        drafts: [EventDraft], now: Date
    ) -> AccountID? {
        guard let owner = state.accountId, !drafts.isEmpty, drafts.allSatisfy({ $0.account == owner }), !saved.ownerHasMore,
            stored?.accountId.map({ $0 == owner }) ?? true,
            CreditLedger.StatusInputs.canFollow(operations, of: state.originalTransactionId, in: saved.ledger, at: now)
        else { return nil }
        return owner
    }

    /// `account.overlapping_subscriptions` when this change leaves the account with auto-renewing sources that overlap
    /// in a group where it had not (``SourceChanges/overlapping(before:after:account:environment:cause:)``).
    private func overlaps(
        after: CreditLedger.StatusInputs, stored: SubscriptionState?, state: SubscriptionState, account: AccountID, now: Date, cause: EventCause?
    ) -> [EventDraft] {
        let catalogue = credits.catalogue
        let afterEntitlements = AccountEntitlements(catalogue.sources(subscriptions: after.subscriptions, records: after.records, at: now))
        guard !afterEntitlements.overlaps.isEmpty else { return [] }
        var before = after.subscriptions.filter { $0.originalTransactionId != state.originalTransactionId }
        if let stored, stored.accountId == account { before.append(stored) }
        let beforeEntitlements = AccountEntitlements(catalogue.sources(subscriptions: before, records: after.records, at: now))
        return SourceChanges.overlapping(
            before: beforeEntitlements, after: afterEntitlements, account: account, environment: state.environment,
            cause: cause ?? EventCause(originalTransactionId: state.originalTransactionId))
    }

    /// The account the facts name and its pseudonym, when that account was erased: a change files the subscription
    /// under the pseudonym (Apple keeps signing the old id on every renewal). Asked only when the owner changes, so an
    /// apply to the same owner costs nothing more; a subscription without an owner before asks in its save's statement.
    /// An owner the app claimed since the erasure is not asked (``Lifecycle/Derivation/ownerClaimed``).
    private func erasedOwner(of derivation: Lifecycle.Derivation, stored: SubscriptionState?, on connection: PostgresConnection) async throws
        -> (account: AccountID, pseudonym: AccountID)?
    {
        guard !derivation.ownerClaimed, let account = derivation.state.accountId, account != stored?.accountId,
            let pseudonym = try await erased.pseudonym(of: account, on: connection)
        else { return nil }
        return (account, pseudonym)
    }

    /// The credit window reset: a job at the start of the next window of the period in force derives the
    /// subscription again, which posts the window's grant. (Reads count a due grant before the job runs.)
    private func scheduleNextWindow(_ derivation: Lifecycle.Derivation, now: Date, on connection: PostgresConnection) async throws {
        guard let start = SubscriptionCredits.nextWindowStart(derivation, catalogue: credits.catalogue, now: now) else { return }
        let state = derivation.state
        let job = try NewJob(
            kind: CreditWindowResetJob.jobKind, arguments: CreditWindowResetJob.Arguments(originalTransactionId: state.originalTransactionId),
            runAt: start, uniqueKey: "credit-reset:\(state.billingPeriodKey):\(Int64(start.timeIntervalSince1970))",
            concurrencyKey: "subscription:\(state.originalTransactionId)")
        try await queue.enqueue(job, on: connection)
    }
}
