/// `GET /admin/audit` (JSON): the operators' actions (openapi `AuditLog`).
struct AuditAnswer: Decodable, Sendable {
    var actions: [Entry]

    /// One operator action (openapi `AuditEntry`); `before` and `after` are whatever the action changed.
    struct Entry: Decodable, Sendable {
        var id: Int
        var at: String
        var `operator`: String
        var role: String
        var action: String
        var request: String
        var status: Int
        @RequiredNullable var accountId: String?
        @RequiredNullable var target: String?
        var before: ArbitraryJSON
        var after: ArbitraryJSON
    }
}
