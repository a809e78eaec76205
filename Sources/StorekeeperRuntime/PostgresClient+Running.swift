import Logging
import PostgresNIO

extension PostgresClient {
    /// Runs a client for the duration of `body` (for one-shot commands: migrate, jobs, benchmarks, tests).
    public static func withRunning<Result: Sendable>(
        _ configuration: PostgresClient.Configuration, logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let pool = await client.startRunning()
        defer { pool.cancel() }
        let result = try await body(client)
        pool.cancel()
        await pool.value
        return result
    }

    /// Starts `run()` in a task of its own and returns that task once `run()` has begun. A statement issued before
    /// `run()` has marked the client running waits all the same, but postgres-nio logs a warning for it — at every
    /// start of `serve` and `work`, whose worker and listener asked at once.
    public func startRunning() async -> Task<Void, Never> {
        let (begun, signal) = AsyncStream<Void>.makeStream()
        // `run()` marks the client running before its first suspension, right after the signal.
        let task = Task {
            signal.finish()
            await self.run()
        }
        for await _ in begun {}
        return task
    }
}
