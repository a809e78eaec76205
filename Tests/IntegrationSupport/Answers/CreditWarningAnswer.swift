/// `GET /v1/events?types=credits.low,credits.exhausted`: a page of the feed's credit warnings (openapi `EventFeedPage`),
/// each `change` read as docs/events.md documents those two types (openapi leaves `change` open).
struct CreditWarningFeedAnswer: Decodable, Sendable {
    var events: [Warning]
    var next: String

    /// One `credits.low` or `credits.exhausted` event (openapi `Event`).
    struct Warning: Decodable, Sendable {
        var id: String
        var type: String
        var data: WarningData
    }

    /// The event's `data`: the account and what crossed the threshold.
    struct WarningData: Decodable, Sendable {
        var accountId: String?
        var change: Change
    }

    /// `meter`, `remaining` and the `threshold` crossed, in credits (docs/events.md).
    struct Change: Decodable, Sendable {
        var meter: String
        var remaining: Int64
        var threshold: Int64
    }
}
