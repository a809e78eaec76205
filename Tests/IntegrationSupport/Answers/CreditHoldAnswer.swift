/// `POST /v1/accounts/{accountId}/holds` (201), `GET /v1/holds/{holdId}`, and the settle and release routes, by id or
/// by idempotency key: one credit hold (openapi `Hold`).
struct CreditHoldAnswer: Decodable, Sendable {
    var id: String
    var accountId: String
    var meter: String
    var amount: Int64
    var state: String
    var createdAt: String
    var expiresAt: String
    var charged: Int64?
    var returned: Int64?
    var lapsed: Int64?
    var endedAt: String?
    /// May be absent or `null` (an unlimited meter).
    var remaining: Int64?
}

/// `POST /v1/accounts/{accountId}/usage/{idempotencyKey}/reverse`: a spend given back (openapi `SpendReversal`).
struct SpendReversalAnswer: Decodable, Sendable {
    var meter: String
    var amount: Int64
    var returned: Int64
    var lapsed: Int64
    var reversedAt: String
}
