import StatementFencing

/// How long a route waits for the database before it answers 503: production's statement deadline.
let databaseDeadline: Duration = .seconds(5)

/// Runs a route's database work under a deadline: whatever it waits for (a pool lease while PostgreSQL is away, a
/// statement that never returns), the route answers 503 `unavailable` within `timeout`. An error that is already an
/// HTTP answer passes through; any other (a driver's) is an outage to the client too — retry later — and is logged.
/// A write whose outcome the client cannot know then (one handed to a commit group, or committed as the connection
/// closed) says so in `message`, as a spend's does.
func withDatabase<Result: Sendable>(
    timeout: Duration = databaseDeadline, message: String = "the database is unavailable; retry later",
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    do {
        return try await withDeadline(timeout, operation)
    } catch let error as APIError {
        throw error
    } catch {
        var unavailable = APIError.unavailable(message)
        unavailable.cause =
            error is DeadlineExceeded
            ? (.warning, "database deadline passed", "\(timeout)") : (.error, "database request failed", String(reflecting: error))
        throw unavailable
    }
}
