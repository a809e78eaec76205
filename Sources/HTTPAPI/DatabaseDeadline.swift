import StatementFencing

/// How long a route waits for the database before it answers 503: production's statement deadline.
let databaseDeadline: Duration = .seconds(5)

/// Runs a route's database work under a deadline: whatever it waits for (a pool lease while PostgreSQL is away, a
/// statement that never returns), the route answers 503 `unavailable` within `timeout`. An error that is already an
/// HTTP answer passes through; any other (a driver's) is an outage to the client too — retry later — and is logged.
func withDatabase<Result: Sendable>(
    timeout: Duration = databaseDeadline, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    do {
        return try await withDeadline(timeout, operation)
    } catch let error as APIError {
        throw error
    } catch {
        throw DatabaseUnavailable(underlying: error)
    }
}

/// The database did not answer in time, or failed: 503 at the edge, logged there with its cause.
struct DatabaseUnavailable: Error {
    let underlying: any Error
}
