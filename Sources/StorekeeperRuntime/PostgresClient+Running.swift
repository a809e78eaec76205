import Logging
import PostgresNIO

extension PostgresClient {
    /// Runs a client for the duration of `body` (for one-shot commands: migrate, jobs, benchmarks, tests).
    public static func withRunning<Result: Sendable>(
        _ configuration: PostgresClient.Configuration, logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
