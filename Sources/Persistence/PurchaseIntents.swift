import Entitlements
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions
import Synchronization

/// The `appAccountToken`s apps asked for (`POST /v1/accounts/{id}/purchase-intents`): an app whose account ids are
/// not UUIDs passes a fresh token to StoreKit for each purchase, and notifications carrying it resolve to the account.
///
/// Every apply asks for the tokens of its subscription's transactions, so an instance remembers each token's answer:
/// the answer never changes. A token is stored before the app can pass it to StoreKit (``issue(for:)`` commits before
/// it returns), so no notification carries it before its intent is found, and intents are never changed or deleted;
/// a token that was never issued (an account's own UUID) never will be, as issued tokens are random.
public struct PurchaseIntents: Sendable {
    private let client: PostgresClient?
    private let erased: ErasedAccounts?
    private let logger: Logger
    private let answers = Answers()

    /// - Parameters:
    ///   - client: where ``issue(for:)`` writes; the other methods run on the caller's connection.
    ///   - erased: where ``account(ofToken:on:)`` finds erased accounts' pseudonyms; `nil` for a use that resolves no
    ///     purchase (issuing tokens).
    public init(client: PostgresClient? = nil, erased: ErasedAccounts? = nil, logger: Logger) {
        self.client = client
        self.erased = erased
        self.logger = logger
    }

    /// A fresh token for a purchase by `account`.
    public func issue(for account: AccountID) async throws -> UUID {
        guard let client else { throw PersistenceError(.corruptRecord, "purchase intents were built without a database client") }
        return try await client.withFencedConnection { try await issue(for: account, on: $0) }
    }

    /// A fresh token for a purchase by `account`, on the caller's connection (committed with its transaction).
    public func issue(for account: AccountID, on connection: PostgresConnection) async throws -> UUID {
        let token = UUID()
        try await connection.query("INSERT INTO purchase_intents (token, account_id) VALUES (\(token), \(account))", logger: logger)
        return token
    }

    /// The accounts of those of `tokens` an app asked for (lowercased token → account); other tokens are not listed.
    public func accounts(ofTokens tokens: [String], on connection: PostgresConnection) async throws -> [String: AccountID] {
        let uuids = Set(tokens.compactMap { UUID(text: $0) })
        var (accounts, unknown) = answers.lookUp(uuids)
        guard !unknown.isEmpty else { return accounts }
        let rows = try await connection.run(PreparedQuery<IntendedAccounts>(Array(unknown)), logger: logger)
        var found: [UUID: AccountID] = [:]
        for row in rows {
            let (token, account) = try row.decode((UUID, AccountID).self)
            found[token] = account
            accounts[token.lowercasedText] = account
        }
        answers.remember(unknown, found: found)
        return accounts
    }

    /// The tokens looked up so far, each with its account or none; past ``capacity`` tokens it starts over.
    private final class Answers: Sendable {
        static let capacity = 100_000
        private let known = Mutex<[UUID: AccountID?]>([:])

        /// The accounts of those of `tokens` known to have one (lowercased token → account), and the tokens not
        /// looked up yet.
        func lookUp(_ tokens: Set<UUID>) -> (accounts: [String: AccountID], unknown: [UUID]) {
            known.withLock { known in
                var accounts: [String: AccountID] = [:]
                var unknown: [UUID] = []
                for token in tokens {
                    switch known[token] {
                    case .some(.some(let account)): accounts[token.lowercasedText] = account
                    case .some(.none): break
                    case .none: unknown.append(token)
                    }
                }
                return (accounts, unknown)
            }
        }

        func remember(_ tokens: [UUID], found: [UUID: AccountID]) {
            known.withLock { known in
                if known.count + tokens.count > Self.capacity { known.removeAll(keepingCapacity: true) }
                for token in tokens { known[token] = .some(found[token]) }
            }
        }
    }

    /// The accounts of tokens `$1` (asked by every apply whose tokens are not remembered).
    enum IntendedAccounts: PreparedSQL {
        static let sql = "SELECT token, account_id FROM purchase_intents WHERE token = ANY($1::uuid[])"
    }

    /// Remembers the answers for `tokens` read elsewhere (`found`: those that have an intent, with its account).
    public func remember(_ tokens: [UUID], found: [UUID: AccountID]) {
        answers.remember(tokens, found: found)
    }

    /// The account a token names: the one that asked for it, else the token itself as a UUID account.
    public func account(ofToken token: String?, on connection: PostgresConnection) async throws -> AccountID? {
        guard let token else { return nil }
        guard let account = try await accounts(ofTokens: [token], on: connection)[token.lowercased()] ?? AccountID(token) else { return nil }
        // An erased account's purchases arriving later are filed under its pseudonym.
        return try await erased?.pseudonym(of: account, on: connection) ?? account
    }
}
