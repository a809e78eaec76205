/// One event of the feed (openapi `Event`), as `GET /v1/events` and `GET /admin/events` list them.
struct EventAnswer: Decodable, Sendable {
    var id: String
    var type: String
    var timestamp: String
    var sequence: Int64
    var cursor: String
    var data: DataAnswer

    /// What the event is about; every member may be absent.
    struct DataAnswer: Decodable, Sendable {
        var accountId: String?
        var subscriptionId: String?
        var environment: String?
        var sandbox: Bool?
        var change: ArbitraryJSON?
        var cause: ArbitraryJSON?
        var status: StatusAnswer?
    }
}

/// `GET /admin/events` (openapi `EventList`).
struct EventListAnswer: Decodable, Sendable {
    var events: [EventAnswer]
}

/// `GET /v1/events`: a page of the feed and the cursor to read on from (openapi `EventFeedPage`).
struct EventFeedPageAnswer: Decodable, Sendable {
    var events: [EventAnswer]
    var next: String
}

/// `GET /admin/events/{id}`: an event and its deliveries (openapi `EventDetail`).
struct EventDetailAnswer: Decodable, Sendable {
    var event: EventAnswer
    var deliveries: [Delivery]
    var attempts: [Attempt]

    /// The event's delivery to one endpoint.
    struct Delivery: Decodable, Sendable {
        var endpoint: String
        var state: String
        var attempts: Int
        var nextAttemptAt: String?
        var deliveredAt: String?
    }

    /// One attempt to deliver it.
    struct Attempt: Decodable, Sendable {
        var endpoint: String
        var attemptedAt: String
        var statusCode: Int?
        var latencyMs: Int
        var error: String?
    }
}
