import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// The posts of applies that share a transaction, left to one round trip
    /// (``flush(_:on:)``) instead of one each: only those whose owner's status is worked out without a read
    /// (``StatusInputs/after(_:of:in:posting:posted:at:)``), which counts every row as written.
    ///
    /// Whoever reads or writes a deferred account's ledger first flushes (``flush(_:touching:on:)``); the transaction's
    /// last write flushes the rest. A row found posted already fails the flush, and with it the shared transaction:
    /// each apply then runs alone, posting as it goes and told which rows it wrote.
    public struct DeferredPosts: Sendable {
        var operations: [LedgerOperation] = []
        var expected: Set<String> = []
        var accounts: Set<AccountID> = []
        var at: Date?

        /// Nothing waiting yet.
        public init() {}

        /// Nothing is waiting.
        public var isEmpty: Bool { operations.isEmpty }

        /// Whether a post of one of `accounts` is waiting.
        public func touches(_ accounts: [AccountID?]) -> Bool {
            accounts.contains { $0.map(self.accounts.contains) ?? false }
        }

        /// The keys of the rows posting `operations` writes when none of them is posted already (a zero delta writes
        /// no row).
        public static func keys(of operations: [LedgerOperation]) -> Set<String> {
            Set(
                operations.compactMap { operation in
                    guard case .post(let entry, _) = operation, entry.delta != 0 else { return nil }
                    return entry.operationKey
                })
        }
    }

    /// Leaves `operations` (of `account`'s subscription, at `now`) to `deferred`'s flush and answers the keys of the
    /// rows they will write, which the flush holds them to. Posts made at another instant are flushed first: one
    /// round trip posts at one instant.
    public func deferPosting(
        _ operations: [LedgerOperation], of account: AccountID, at now: Date, into deferred: inout DeferredPosts, on connection: PostgresConnection
    ) async throws -> Set<String> {
        let keys = DeferredPosts.keys(of: operations)
        // A row another apply's posts name already would be written once, and counted by both: posted first, it is
        // then skipped, and the flush fails for it.
        if let at = deferred.at, at != now || !deferred.expected.isDisjoint(with: keys) { try await flush(&deferred, on: connection) }
        guard !operations.isEmpty else { return keys }
        deferred.operations += operations
        deferred.expected.formUnion(keys)
        deferred.accounts.insert(account)
        deferred.at = now
        return keys
    }

    /// Posts what `deferred` holds, when a post of one of `accounts` is among it; nothing without `deferred`.
    public func flush(_ deferred: inout DeferredPosts?, touching accounts: [AccountID?], on connection: PostgresConnection) async throws {
        guard var waiting = deferred, waiting.touches(accounts) else { return }
        try await flush(&waiting, on: connection)
        deferred = waiting
    }

    /// Posts what `deferred` holds; nothing without `deferred`.
    public func flush(_ deferred: inout DeferredPosts?, on connection: PostgresConnection) async throws {
        guard var waiting = deferred else { return }
        try await flush(&waiting, on: connection)
        deferred = waiting
    }

    /// Posts what `deferred` holds, in order, in one round trip, and empties it. Throws when a row was not written
    /// (its key was posted already): the statuses worked out for it counted it, so the transaction must not commit.
    public func flush(_ deferred: inout DeferredPosts, on connection: PostgresConnection) async throws {
        guard let at = deferred.at, !deferred.operations.isEmpty else { return }
        let posting = try await post(deferred.operations, at: at, on: connection)
        let expected = deferred.expected
        deferred = DeferredPosts()
        guard posting.posted == expected else {
            logger.notice(
                "deferred ledger rows were posted already: the shared transaction rolls back and its applies run alone",
                metadata: ["ledger.rows": "\(expected.subtracting(posting.posted).sorted())"])
            throw PersistenceError(
                .postedAlready,
                "\(expected.subtracting(posting.posted).count) of \(expected.count) deferred ledger rows were posted already")
        }
    }
}
