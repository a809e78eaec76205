import Entitlements
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions
import Synchronization

/// Erases an account's personal data (`POST /admin/accounts/{id}/erase`): in one transaction holding the account's
/// lock, every row accounting needs moves to a pseudonym, the rest is deleted (``ErasedAccounts``), and the id's keyed
/// digest is filed so that facts Apple signs later with the old id go to the pseudonym too. Erasing again changes
/// nothing; an id that holds nothing is refused and leaves no trace, so a customer never seen is never filed as erased.
public struct AccountErasure: Sendable {
    /// What an erasure did.
    public struct Outcome: Sendable, Equatable {
        public var pseudonym: AccountID
        /// Erased before: nothing was held under the id any more.
        public var alreadyErased: Bool
        public var counts: ErasedAccounts.Counts
        /// The keyed digest the erasure is filed (and audited) under.
        public var digest: String
    }

    /// Why an erasure is not made.
    public enum Refusal: Error, Sendable, Equatable {
        /// No `STOREKEEPER_ERASURE_KEY`: the digest could not be keyed.
        case notConfigured
        /// Nothing here names the id, and it was never erased.
        case holdsNothing
        /// Accounts were erased under another `STOREKEEPER_ERASURE_KEY` (sql/0067): an erasure under this one would not
        /// be recognised beside theirs. The text says which fingerprints differ.
        case keyDiffers(String)
    }

    /// A statement of the erasure failed and the transaction was rolled back. `detail` is the database's error with
    /// the pseudonym replaced, so the log line that names the request's id does not tie it to the pseudonym.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var detail: String
        public var description: String { detail }
    }

    private let client: PostgresClient
    private let credits: CreditLedger
    private let erased: ErasedAccounts
    private let cache: AccountStatusCache?
    private let logger: Logger

    public init(client: PostgresClient, credits: CreditLedger, erased: ErasedAccounts, cache: AccountStatusCache? = nil, logger: Logger) {
        self.client = client
        self.credits = credits
        self.erased = erased
        self.cache = cache
        self.logger = logger
    }

    /// Answers once the database does (`PostgresClient.reachable`).
    public func reachable() async throws { try await client.reachable(logger: logger) }

    /// Erases `account`; throws ``Refusal`` before touching anything when it cannot or need not.
    public func erase(_ account: AccountID, by operatorName: String, now: Date) async throws -> Outcome {
        guard erased.isConfigured, let digest = erased.digest(of: account) else { throw Refusal.notConfigured }
        // This process drops the id at once, after the commit; the NOTIFY below reaches the others (and this one's
        // listener) a moment later, when a status read here could still have answered from the cache.
        defer { cache?.invalidate(account) }
        do {
            try await client.withFencedConnection { try await erased.confirmKey(recording: true, at: now, on: $0) }
        } catch let error as PersistenceError where error.code == .erasureKeyDiffers {
            throw Refusal.keyDiffers(error.message)
        }
        let used = Mutex<AccountID?>(nil)
        let outcome: Outcome?
        do {
            // Erasing again moves what the id gained since onto its pseudonym: the pseudonym's lock is taken too, as
            // every writer of an account takes its own (an apply for the pseudonym counts on nothing of its owner
            // changing without it, sql/0054) — both in byte order, as spends and transfers take theirs.
            let known = try await client.withFencedConnection { try await erased.pseudonym(of: account, on: $0) }
            outcome = try await client.withFencedTransaction(logger: logger) { connection -> Outcome? in
                for id in Set([account] + [known].compactMap { $0 }).sorted() { try await credits.lockAccount(id, on: connection) }
                let before = try await erased.pseudonym(of: account, on: connection)
                // Erased meanwhile by another operator: its pseudonym, locked now.
                if let before, before != known { try await credits.lockAccount(before, on: connection) }
                if before == nil, try await !erased.holdsAnything(account, on: connection) { return nil }
                let pseudonym = before ?? AccountID(UUID().lowercasedText)!
                used.withLock { $0 = pseudonym }
                try await erased.file(account, pseudonym: pseudonym, by: operatorName, at: now, on: connection)
                let counts = try await erased.erase(account, as: pseudonym, on: connection)
                // Every process drops what it cached about the id.
                try await erased.announceChange(of: account, on: connection)
                return Outcome(
                    pseudonym: pseudonym, alreadyErased: before != nil && counts == ErasedAccounts.Counts(), counts: counts, digest: digest)
            }
        } catch {
            let detail = String(reflecting: error)
            throw Failure(detail: used.withLock { $0 }.map { detail.replacingOccurrences(of: $0.text, with: "<pseudonym>") } ?? detail)
        }
        guard let outcome else { throw Refusal.holdsNothing }
        // Neither the id nor the pseudonym: a log line must not tie the two together, nor name the customer.
        logger.notice("account erased", metadata: ["again": "\(outcome.alreadyErased)", "rows.audit": "\(outcome.counts.auditEntries)"])
        return outcome
    }
}
