/// A page of a Stripe list (`{"object": "list", "data": [...], "has_more": bool}`): the next page starts after the
/// last item's id.
public struct StripeList<Item: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var data: [Item]
    public var hasMore: Bool

    public init(data: [Item], hasMore: Bool = false) {
        self.data = data
        self.hasMore = hasMore
    }

    enum CodingKeys: String, CodingKey {
        case data
        case hasMore = "has_more"
    }
}
