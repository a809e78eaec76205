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
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            cache.setListening(true)
                            for try await notification in notifications {
                                if let account = AccountID(notification.payload) { cache.invalidate(account) }
                            }
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        logger.notice("account change listener lost its connection; status reads go to the database", metadata: ["error": "\(error)"])
                    }
                }
                cache.setListening(false)
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
