import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs `statement` as an unnamed statement: parsed and planned at each call.
    ///
    /// Statements are written as ``PostgresPreparedStatement`` values (static SQL, explicit bindings) but not executed
    /// as server-side prepared statements: with postgres-nio's prepared-statement path, the PostgreSQL-restart drill
    /// left a worker with job attempts that never finished (about one run in three). Until that is understood, every
    /// statement takes the unnamed path, which the drills pass.
    public func run<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws
        -> AsyncThrowingMapSequence<PostgresRowSequence, Statement.Row>
    {
        let rows = try await query(PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings()), logger: logger)
        return rows.map { try statement.decodeRow($0) }
    }
}
