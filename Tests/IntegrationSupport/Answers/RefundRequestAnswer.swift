/// `GET /v1/accounts/{accountId}/refund-requests`: the account's refund requests from Apple.
struct RefundRequestListAnswer: Decodable, Sendable {
    var refundRequests: [RefundRequestAnswer]
}

/// One refund request and what was answered to Apple (openapi `RefundRequest`); also inside
/// `PUT /v1/refund-requests/{id}/answer`'s `refundRequest`.
struct RefundRequestAnswer: Decodable, Sendable {
    var id: String
    var accountId: String
    var transactionId: String
    var originalTransactionId: String
    var productId: String
    var billingPeriod: String
    var purchase: String
    var environment: String
    var reason: String?
    var requestedAt: String
    var answerAt: String
    var deadlineAt: String
    var state: String
    var appAnswer: ConsumptionAnswer?
    var sentAnswer: ConsumptionAnswer?
    var attempts: Int
    var lastError: String?
    var answeredAt: String?
    var outcome: String?
    var outcomeAt: String?
    var store: String
    var answerPreview: Preview?

    /// What Storekeeper would answer an open request now (openapi `RefundAnswerPreview`).
    struct Preview: Decodable, Sendable {
        var answer: ConsumptionAnswer
        var source: String
        var consumptionPercentage: Int?
        var consented: Bool
        var wouldSend: Bool
        var notSent: [String]
    }

    /// The consumption information for Apple (openapi `ConsumptionAnswer`).
    struct ConsumptionAnswer: Decodable, Sendable {
        var customerConsented: Bool
        var consumptionPercentage: Int?
        var deliveryStatus: String
        var refundPreference: String?
        var sampleContentProvided: Bool
    }
}

/// `PUT /v1/refund-requests/{id}/answer`.
struct RefundRequestAnswerAnswer: Decodable, Sendable {
    var refundRequest: RefundRequestAnswer
}

/// `PUT /v1/accounts/{accountId}/consent`: the customer's consent to share consumption data (openapi `Consent`).
struct ConsentAnswer: Decodable, Sendable {
    var accountId: String
    var consented: Bool
    var recordedAt: String
}
