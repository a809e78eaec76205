/// `GET /admin/search?q=…`: the accounts an id leads to, and Apple's order-id lookup (openapi `/admin/search`).
struct SearchAnswer: Decodable, Sendable {
    var query: String
    var matches: [Match]
    @RequiredNullable var orderLookup: OrderLookup?

    /// An account the query leads to, and by what.
    struct Match: Decodable, Sendable {
        var accountId: String
        var matchedBy: String
        @RequiredNullable var source: String?
    }

    /// What Look Up Order ID answered, when the query was asked of Apple.
    struct OrderLookup: Decodable, Sendable {
        var status: String
        var message: String
    }
}
