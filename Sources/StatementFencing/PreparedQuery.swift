import PostgresNIO

/// The text of a statement that is prepared once per connection — parsed and planned once rather than at every call,
/// which for the statements every apply or status read runs costs more than executing them — and whose rows the
/// caller decodes. Each conforming type names one statement.
///
/// ```swift
/// enum AccountSubscriptions: PreparedSQL { static let sql = "SELECT … FROM subscriptions WHERE account_id = $1" }
/// let rows = try await connection.run(PreparedQuery<AccountSubscriptions>(account), logger: logger)
/// ```
public protocol PreparedSQL {
    static var sql: String { get }
}

/// A ``PreparedSQL`` statement with its values bound in order; its rows are returned as they come.
public struct PreparedQuery<Text: PreparedSQL>: PostgresPreparedStatement {
    public static var sql: String { Text.sql }
    private let bindings: PostgresBindings

    /// Binds `values` to `$1`, `$2`, …; `nil` binds NULL (the statement's text gives the types).
    public init(_ values: (any PostgresEncodable)?...) throws {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { try bindings.append(value) } else { bindings.appendNull() }
        }
        self.bindings = bindings
    }

    public func makeBindings() -> PostgresBindings { bindings }

    public func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
