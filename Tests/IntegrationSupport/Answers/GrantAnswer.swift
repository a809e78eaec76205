/// `POST /admin/accounts/{accountId}/grants`, `DELETE /admin/grants/{grantId}`: an operator grant (openapi `Grant`).
struct GrantAnswer: Decodable, Sendable {
    var id: String
    @RequiredNullable var accountId: String?
    @RequiredNullable var tier: String?
    var status: String
    var entitled: Bool
    var startsAt: String
    @RequiredNullable var endsAt: String?
    @RequiredNullable var endedAt: String?
    @RequiredNullable var endReason: String?
    @RequiredNullable var reason: String?
    @RequiredNullable var createdBy: String?
    var endedNow: Bool?
}

/// `GET /admin/accounts/{accountId}/grants` (openapi `GrantList`).
struct GrantListAnswer: Decodable, Sendable {
    var grants: [GrantAnswer]
}
