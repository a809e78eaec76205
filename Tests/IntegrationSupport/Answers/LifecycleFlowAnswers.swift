import Testing

extension LifecycleFlow {
    /// The account's status, decoded: `GET /v1/accounts/{accountId}/status`.
    func statusAnswer() async throws -> StatusAnswer {
        try await client.getWithKey("/v1/accounts/\(subscription.accountId!)/status").answer(StatusAnswer.self)
    }

    /// The subscription's detail, decoded: `GET /v1/subscriptions/{originalTransactionId}`.
    func detailAnswer() async throws -> SubscriptionDetailAnswer {
        try await client.getWithKey("/v1/subscriptions/\(originalTransactionId)").answer(SubscriptionDetailAnswer.self)
    }
}

extension LifecycleFlow {
    /// The `credits` entry of one meter in the account's status.
    func credits(_ meter: String = "ai_requests") async throws -> MeterCreditsAnswer {
        try #require(try await statusAnswer().credits[meter])
    }
}
