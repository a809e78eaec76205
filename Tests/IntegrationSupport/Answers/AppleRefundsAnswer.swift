/// `GET /admin/accounts/{accountId}/apple-refunds`: the account's refund history as Apple has it
/// (openapi `/admin/accounts/{accountId}/apple-refunds`).
struct AppleRefundsAnswer: Decodable, Sendable {
    var accountId: String
    var refunds: [Refund]

    /// One refunded transaction.
    struct Refund: Decodable, Sendable {
        var transactionId: String
        var originalTransactionId: String
        var productId: String
        @RequiredNullable var type: String?
        @RequiredNullable var environment: String?
        @RequiredNullable var purchaseDate: String?
        @RequiredNullable var revocationDate: String?
        @RequiredNullable var revocationReason: Int?
        @RequiredNullable var revocationType: String?
        @RequiredNullable var revocationPercentage: Int?
        @RequiredNullable var price: Int?
        @RequiredNullable var currency: String?
    }
}
