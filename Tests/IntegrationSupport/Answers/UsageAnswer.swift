/// `POST /v1/accounts/{accountId}/usage` when the spend is answered, 200 (SPEC §5.2; openapi `UsageAnswer`).
struct UsageAnswer: Decodable, Sendable {
    var meter: String
    @RequiredNullable var remaining: Int64?
}

/// `POST /v1/accounts/{accountId}/usage` refused with 402 `insufficient_credits` or 422 `idempotency_key_reused`
/// (openapi `UsageRefusal`).
struct UsageRefusalAnswer: Decodable, Sendable {
    var error: String
    var message: String
    var meter: String
    @RequiredNullable var remaining: Int64?
}
