import Credits
import Entitlements
import Events
import Foundation
import GooglePlay
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Brings Play subscriptions up to date: reads a token from the Play Developer API (`subscriptionsv2.get`), keeps the
/// read and derives the token's whole chain again from every read held — for a notification's job, a claim and
/// ``GooglePlaySync``. Each chain is then
/// written as one of Storekeeper's subscriptions (``PlayLifecycle``) through the writer every store shares: access,
/// credits, events, analytics, the next credit window.
public struct GooglePlaySubscriptions: Sendable {
    /// What reading a token came to.
    public enum Outcome: String, Sendable {
        /// Read, kept, and its subscription derived.
        case read
        /// Google does not know the token (another app's, or expired more than 60 days ago).
        case notFound = "not_found"
        /// Google refused the read for good (400 "Invalid Value"), or answered something that is not a subscription.
        case refused

        /// What a failed read of any token comes to for good — Google will not answer otherwise however often it is
        /// asked, so it is recorded, not retried for hours; `nil`: worth a retry (Google or the network away).
        init?(failedRead error: GooglePlayAPIError) {
            switch error.kind {
            case .notFound: self = .notFound
            case .refused, .invalidResponse: self = .refused
            default: return nil
            }
        }
    }

    private let client: PostgresClient
    /// `nil` when no service account is configured: nothing can be read.
    public let play: GooglePlayClient?
    private let reads: GoogleSubscriptionStore
    /// Refunded orders, and the acknowledgements Google awaits.
    private let products: GoogleProductStore
    private let subscriptions: SubscriptionStore
    private let writer: SubscriptionWriter
    /// Erased accounts' pseudonyms: Play keeps sending the id an app named at purchase after the account is erased.
    private let erased: ErasedAccounts
    /// Where acknowledgements are enqueued.
    private let queue: any JobScheduling
    /// The catalogue's answers the derivation asks: a product's period, and which plan changes are upgrades.
    private let lifecycleCatalogue: PlayLifecycle.Catalogue
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, play: GooglePlayClient?, writer: SubscriptionWriter, queue: any JobScheduling, catalogue: TierCatalogue,
        erased: ErasedAccounts, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.erased = erased
        self.queue = queue
        self.lifecycleCatalogue = Self.lifecycleCatalogue(catalogue)
        self.client = client
        self.play = play
        self.reads = GoogleSubscriptionStore(logger: logger)
        self.products = GoogleProductStore(logger: logger)
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.writer = writer
        self.clock = clock
        self.logger = logger
    }

    /// Reads `token` and derives its chain, then runs `also` in the same transaction (a job records its outcome and
    /// completes there). `beforeDeriving` runs in that transaction once the chain is locked, with the chain's tokens
    /// (a claim checks the owner and records itself there); what it throws rolls the transaction back. What is worth a
    /// retry — Google or the network away after the client's own retries — throws.
    public func refresh(
        _ token: String, using play: GooglePlayClient, cause: EventCause? = nil,
        beforeDeriving: @escaping @Sendable (PostgresConnection, [String]) async throws -> Void = { _, _ in },
        also: @escaping @Sendable (PostgresConnection, Outcome) async throws -> Void = { _, _ in }
    ) async throws -> Outcome {
        // Stamped when asked, not when answered: of two reads in flight, the one asked later saw the later state,
        // whichever answer arrived first.
        let requestedAt = clock()
        let answer: (purchase: SubscriptionPurchaseV2, body: [UInt8])
        switch await Self.read(token, from: play) {
        case .success(let read): answer = read
        case .failure(let error):
            guard let outcome = Outcome(failedRead: error) else { throw error }
            if outcome == .refused { logger.warning("Play refused to read a token", metadata: ["google.error": "\(error)"]) }
            try await client.withFencedTransaction(logger: logger) { try await also($0, outcome) }
            return outcome
        }
        let read = PlaySubscriptionRead(purchaseToken: token, readAt: requestedAt, purchase: answer.purchase)
        for attempt in 1... {
            do {
                try await client.withFencedTransaction(logger: logger) { connection in
                    try await reads.insert(read, body: answer.body, on: connection)
                    let chain = try await lockedChain(of: token, on: connection)
                    try await beforeDeriving(connection, chain)
                    try await deriveLocked(
                        chain: chain,
                        cause: cause ?? EventCause(notificationType: "google_play.read", originalTransactionId: token), on: connection)
                    try await also(connection, .read)
                    try await reads.markRead(token, at: requestedAt, on: connection)
                }
                return .read
            } catch let error as PostgresTransactionError where error.closureError is ChainGrew && attempt < 10 {
                continue
            }
        }
        return .read
    }

    /// The chain of `token`, every token of it locked, in token order. Two transactions deriving one chain each know
    /// a part of it holding a token the other knows too (a new read names its own token and the one it replaces), so
    /// one waits for the other; other chains are derived in parallel. Locks are taken in one ordered pass, so two
    /// transactions never wait for each other crosswise; a chain that grew meanwhile throws ``ChainGrew`` and the
    /// transaction is run again, its locks released.
    private func lockedChain(of token: String, on connection: PostgresConnection) async throws -> [String] {
        let known = Set(try await reads.chain(of: token, on: connection))
        try await reads.lock(known.sorted(), on: connection)
        let chain = try await reads.chain(of: token, on: connection)
        guard Set(chain).isSubset(of: known) else { throw ChainGrew() }
        return chain
    }

    /// The catalogue as ``PlayLifecycle`` asks it: a period starts one billing period (calendar months and days, UTC)
    /// before its end; a plan change is an upgrade when the new tier's level is above (a lower number) the old one's.
    static func lifecycleCatalogue(_ catalogue: TierCatalogue) -> PlayLifecycle.Catalogue {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return PlayLifecycle.Catalogue(
            periodStart: { [calendar] productId, end in
                guard let period = catalogue.tier(ofProduct: productId)?.product.billingPeriod,
                    let months = calendar.date(byAdding: .month, value: -period.months, to: end)
                else { return nil }
                return calendar.date(byAdding: .day, value: -period.days, to: months)
            },
            isUpgrade: { to, from in
                guard let new = catalogue.tier(ofProduct: to)?.tier.level, let old = catalogue.tier(ofProduct: from)?.tier.level else { return false }
                return new < old
            })
    }

    /// A chain linked to more tokens while its known ones were being locked.
    struct ChainGrew: Error {}

    /// Derives the chain holding `token` again from the reads held (no Play call): a credit window's reset, a replay.
    /// Runs in the caller's transaction; a chain that grows meanwhile is retried by the caller's job. Without `write`
    /// (a replay's dry run) nothing is stored: the outcomes say what would change.
    @discardableResult
    public func derive(
        chainOf token: String, cause: EventCause, write: Bool = true, on connection: PostgresConnection
    ) async throws -> [SubscriptionWriter.Outcome] {
        try await deriveLocked(chain: try await lockedChain(of: token, on: connection), cause: cause, write: write, on: connection)
    }

    /// Derives the chains of `chain` (its tokens locked) from every read held, keeps what was derived, and writes each
    /// as a subscription. A subscription keeps the id it was first filed under: when an older token of its chain
    /// becomes known later (a read naming a predecessor never read), the chain's first token changes, its id does not.
    @discardableResult
    private func deriveLocked(
        chain: [String], cause: EventCause, write: Bool = true, on connection: PostgresConnection
    ) async throws -> [SubscriptionWriter.Outcome] {
        let derived = PlaySubscriptionDerivation.derive(
            try await reads.reads(of: chain, on: connection), revocations: try await reads.revocations(of: chain, on: connection),
            voided: try await products.voided(of: chain, on: connection))
        if write { try await reads.replace(derived, covering: chain, at: clock(), on: connection) }
        var outcomes: [SubscriptionWriter.Outcome] = []
        for var play in derived {
            let filed = try await subscriptions.filed(of: .googlePlay, among: [play.id] + play.tokens, on: connection)
            if let first = filed.first { play.id = first }
            try await subscriptions.lock(play.id, on: connection)
            // Parts of one chain filed apart (a plan change's token read before the one it replaced): one subscription
            // again, under the earliest filing.
            for extra in filed.dropFirst() where write {
                try await subscriptions.lock(extra, on: connection)
                try await subscriptions.merge(googlePlay: extra, into: play.id, on: connection)
                logger.notice(
                    "parts of a Play chain filed apart are one subscription again", metadata: ["subscription.id": "\(play.id)", "merged": "\(extra)"])
            }
            let stored = try await subscriptions.lockedSubscription(play.id, on: connection, lockHeld: true)
            // A claim is the newest word on the owner (stored only as the transfer policy allows); else the account that
            // holds it — a token the app named later (a plan change's) moves nothing, and an erasure's pseudonym does not
            // give way to the bare id Play keeps sending; else the account of the purchase intent the app named at
            // purchase; else the id it named, taken as the account's own; else, for a subscription bought again in the
            // Play Store (no purchase flow of the app named anyone), the owner of the expired purchase Play links it
            // to — unowned, it would never be acknowledged, and Google refunds it after three days.
            let claimed = try await reads.claimingAccount(of: play.tokens, on: connection)
            let intended = try await intendedAccount(of: play.accountToken, on: connection)
            var account = claimed ?? stored?.accountId ?? intended ?? play.accountToken.flatMap(AccountID.init)
            if account == nil, let expired = play.expiredPurchaseToken {
                account = try await owner(ofChain: [expired], on: connection)
            }
            guard let derivation = PlayLifecycle.derive(play, account: account, claimed: claimed != nil, catalogue: lifecycleCatalogue) else {
                continue
            }
            var playCause = cause
            playCause.originalTransactionId = play.id
            let outcome =
                if write {
                    try await writer.save(derivation, stored: stored, cause: playCause, now: clock(), on: connection)
                } else {
                    try await writer.preview(derivation, stored: stored, now: clock(), on: connection)
                }
            guard write else {
                outcomes.append(outcome)
                continue
            }
            // Play names an erased account in every new read (the app set the id at purchase): filed under the
            // pseudonym, as the erasure left the earlier reads.
            // Asked only when the named id is not the account itself nor an intent's token, so a usual apply costs nothing.
            if intended == nil, let named = play.accountToken.flatMap(AccountID.init), named != outcome.state?.accountId,
                let pseudonym = try await erased.pseudonym(of: named, on: connection)
            {
                _ = try await erased.moveGooglePlay(held: [play.id] + play.tokens, from: named, to: pseudonym, on: connection)
            }
            outcomes.append(outcome)
            // Granted to an account: Google is told, or it refunds the purchase after three days.
            if outcome.state?.accountId != nil, play.awaitsAcknowledgement, let productId = play.subscriptionProductId {
                try await GoogleAcknowledgeJob.enqueue(
                    // Google's three days run from the purchase of the token (a plan change's new token included).
                    .init(productId: productId, purchaseToken: play.currentToken, purchase: .subscription),
                    grantedAt: play.periods.last { $0.purchaseToken == play.currentToken }?.tokenStart ?? clock(), queue: queue,
                    store: products, on: connection)
            }
        }
        return outcomes
    }

    /// The account holding the chain of `chain`'s tokens now (on the caller's transaction, the chain locked): the
    /// newest claim's, else the filed subscription's, else the one its reads name (`obfuscatedExternalAccountId`, set
    /// by the app at purchase).
    public func owner(ofChain chain: [String], on connection: PostgresConnection) async throws -> AccountID? {
        if let claimed = try await reads.claimingAccount(of: chain, on: connection) { return claimed }
        for id in try await subscriptions.filed(of: .googlePlay, among: chain, on: connection) {
            if let owner = try await subscriptions.lockedSubscription(id, on: connection, lockHeld: true)?.accountId { return owner }
        }
        for play in PlaySubscriptionDerivation.derive(try await reads.reads(of: chain, on: connection)) {
            if let named = try await intendedAccount(of: play.accountToken, on: connection) ?? play.accountToken.flatMap(AccountID.init) {
                return named
            }
        }
        return nil
    }

    /// The account a purchase intent's token named by `obfuscatedExternalAccountId` was issued to (the app passes the
    /// token, as for Apple's `appAccountToken`). An app whose ids are already opaque and short passes the id itself.
    private func intendedAccount(of token: String?, on connection: PostgresConnection) async throws -> AccountID? {
        guard let token else { return nil }
        return try await writer.purchaseIntents.accounts(ofTokens: [token], on: connection)[token.lowercased()]
    }

    private static func read(_ token: String, from play: GooglePlayClient) async -> Result<
        (purchase: SubscriptionPurchaseV2, body: [UInt8]), GooglePlayAPIError
    > {
        do {
            return .success(try await play.subscription(token))
        } catch {
            return .failure(error)
        }
    }
}
