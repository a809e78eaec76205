import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs `statement` as a server-side prepared statement (parsed and planned once per connection) and returns its
    /// rows. Should the connection close before the answer comes, the call fails within about two seconds instead of
    /// waiting forever (see ``ClosedConnectionWatch``).
    public func run<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws
        -> [Statement.Row] where Statement.Row: Sendable
    {
        try await ClosedConnectionWatch.shared.fence(self) {
            var rows: [Statement.Row] = []
            for try await row in try await self.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }
}
