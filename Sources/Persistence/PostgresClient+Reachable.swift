import Logging
import PostgresNIO

extension PostgresClient {
    /// Answers once the database does. A route whose work may take long (an export, an erasure, a question to Apple)
    /// runs this first under the usual short deadline, so a database outage is still a quick 503.
    public func reachable(logger: Logger) async throws {
        try await query("SELECT 1", logger: logger)
    }
}
