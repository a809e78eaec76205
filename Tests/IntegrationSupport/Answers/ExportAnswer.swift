/// `POST /admin/accounts/{accountId}/export`: everything held about an account. The contract leaves `holdings` (an
/// object) and `events` (an array) open, so only the named members are typed here.
struct ExportAnswer: Decodable, Sendable {
    var accountId: String
    var exportedAt: String
}
