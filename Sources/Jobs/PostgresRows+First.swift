import PostgresNIO

extension AsyncSequence where Element == PostgresRow, Failure == any Error {
    /// The first row's single column, or nil when there is no row.
    func first<Value: PostgresDecodable & Sendable>(_ type: Value.Type) async throws -> Value? {
        for try await value in decode(type) { return value }
        return nil
    }
}
