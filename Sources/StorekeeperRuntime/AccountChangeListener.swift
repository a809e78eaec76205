import Application
import Logging
import PostgresNIO
import ServiceLifecycle
import Subscriptions

/// Hears the database's `storekeeper_account_changed` NOTIFYs (`sql/0012_account_changes.sql`) and drops the accounts
/// they name from `serve`'s status cache. While it is not connected the cache serves nothing, and it starts empty
/// every time the LISTEN is back — a change it could not hear is never served stale.
public struct AccountChangeListener: Service {
    public static let channel = "storekeeper_account_changed"

    let client: PostgresClient
    let cache: AccountStatusCache
    let logger: Logger

    public init(client: PostgresClient, cache: AccountStatusCache, logger: Logger) {
        self.client = client
        self.cache = cache
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            // Told once each way: while the database is down, an attempt a second fails the same way.
            var lost = false
            while !Task.isCancelled {
                let announce = lost
                var failure: (any Error)?
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            cache.setListening(true)
                            if announce { logger.notice("account change listener is listening again; the status cache serves again") }
                            for try await notification in notifications {
                                if let account = AccountID(notification.payload) { cache.invalidate(account) }
                            }
                        }
                    }
                } catch {
                    failure = error
                }
                // Said when it was listening (or at the first attempt), not at each retry while the database is down;
                // `String(reflecting:)`: PSQLError's description is a generic line, kept from leaking a query.
                if !Task.isCancelled, !lost || cache.isListening {
                    logger.notice(
                        "account change listener lost its connection; status reads go to the database",
                        metadata: failure.map { ["error": "\(String(reflecting: $0))"] } ?? [:])
                }
                lost = true
                cache.setListening(false)
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
