/// `POST /admin/accounts/{accountId}/erase`: what erasing an account did (openapi `/admin/accounts/{accountId}/erase`).
struct ErasureAnswer: Decodable, Sendable {
    var accountId: String
    /// What the kept rows are filed under; null when the id was erased before.
    @RequiredNullable var pseudonym: String?
    var alreadyErased: Bool
    var counts: [String: Int]
}
