/// Runs `operation`, giving up after `timeout` so a dead database turns into a quick 503 instead of a hung request.
func withDeadline<Result: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else { throw DeadlineExceeded() }
        return result
    }
}

struct DeadlineExceeded: Error {}
