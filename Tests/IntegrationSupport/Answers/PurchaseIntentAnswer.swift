/// `POST /v1/accounts/{accountId}/purchase-intents`, 201 (openapi `PurchaseIntent`).
struct PurchaseIntentAnswer: Decodable, Sendable {
    var accountId: String
    var appAccountToken: String
}
