import PostgresNIO
import Synchronization

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
    /// The statement's name on its connection: the type's own name and a digest of its full name. PostgreSQL keeps
    /// 63 bytes of a name, and the default — the full type name, `StatementFencing.PreparedQuery<Module.Owner.Name>` —
    /// is longer, so two statements whose names differ only after those 63 bytes were prepared under one name.
    /// Made once per statement: PostgresNIO asks for it at every execution, and a type's name is slow to spell.
    public static var name: String { StatementNames.name(of: Text.self) }
    private let bindings: PostgresBindings

    /// Binds `values` to `$1`, `$2`, …; `nil` binds NULL (the statement's text gives the types).
    public init(_ values: (any PostgresEncodable)?...) throws {
        try self.init(binding: values)
    }

    /// Binds `values` to `$1`, `$2`, … as ``init(_:)`` does, for values gathered in parts.
    public init(binding values: [(any PostgresEncodable)?]) throws {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { try bindings.append(value) } else { bindings.appendNull() }
        }
        self.bindings = bindings
    }

    public func makeBindings() -> PostgresBindings { bindings }

    public func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// The names of ``PreparedQuery`` statements, by their ``PreparedSQL`` type.
private enum StatementNames {
    private static let names = Mutex<[ObjectIdentifier: String]>([:])

    static func name(of text: any PreparedSQL.Type) -> String {
        if let name = names.withLock({ $0[ObjectIdentifier(text)] }) { return name }
        let full = String(reflecting: text)
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in full.utf8 { digest = (digest ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let name = "\(String(describing: text).prefix(40))_\(String(digest, radix: 16))"
        names.withLock { $0[ObjectIdentifier(text)] = name }
        return name
    }
}
