/// Errors of the persistence module. Descriptions never contain SQL error details or payloads.
public struct PersistenceError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case migrationsNotFound
        case migrationFileInvalid
        /// The database was migrated by a newer Storekeeper.
        case databaseNewerThanCode
        /// A migration already applied has different content than the file of the same version.
        case migrationChanged
        /// A migration gave up waiting for a lock as many times as it was allowed to try.
        case migrationBlocked
        /// A migration's statement failed (other than by waiting for a lock); the file was not applied.
        case migrationFailed
        case corruptRecord
        /// A setting the operation needs is not configured (the erasure's key).
        case notConfigured
        /// Accounts were erased under another `STOREKEEPER_ERASURE_KEY` than the one configured, or under one while none is.
        case erasureKeyDiffers
        /// A ledger row left to a later round trip was posted already (``CreditLedger/flush(_:on:)``): its status was
        /// worked out as if written, so the transaction must not commit.
        case postedAlready
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
