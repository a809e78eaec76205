/// `POST /admin/accounts/{accountId}/credits`: support's top-up adjustment, 201 when posted, 200 when its key was
/// seen before (openapi `/admin/accounts/{accountId}/credits`).
struct CreditAdjustmentAnswer: Decodable, Sendable {
    var accountId: String
    var meter: String
    var amount: Int64
    var reason: String
    var posted: Bool
    var topUpBalance: Int64
}
