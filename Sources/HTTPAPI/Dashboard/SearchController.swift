import Foundation
import Hummingbird
import Persistence

/// Finds accounts by any id (the seam tests can replace).
public protocol AccountSearching: Sendable {
    func matches(_ text: String, limit: Int) async throws -> [AccountSearch.Match]
}

extension AccountSearch: AccountSearching {}

/// `GET /admin/search?q=`: the accounts an id names — an account id, an App Store transaction or original transaction
/// id, a Stripe subscription, customer, invoice or charge id, a purchase token — as JSON. The dashboard's search box
/// (`GET /admin?find=`) shows the same. Any role may search.
struct SearchController: Sendable {
    let search: any AccountSearching

    struct Answer: ResponseEncodable {
        var query: String
        var matches: [Match]
    }

    struct Match: Encodable {
        var accountId: String
        var matchedBy: String
        var source: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(accountId, forKey: .accountId)
            try container.encode(matchedBy, forKey: .matchedBy)
            try container.encode(source, forKey: .source)
        }

        enum CodingKeys: String, CodingKey { case accountId, matchedBy, source }
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("search") { request, _ -> Answer in
            let text = try Self.query(request.uri.queryParameters.get("q"))
            let found = try await withDatabase { try await search.matches(text, limit: 20) }
            return Answer(query: text, matches: found.map { Match(accountId: $0.accountId, matchedBy: $0.matchedBy, source: $0.source) })
        }
    }

    /// A search text: 1–512 bytes, no control characters, trimmed (ids pasted from an e-mail carry spaces).
    static func query(_ text: String?) throws -> String {
        let trimmed = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.isKey(maximumBytes: 512) else { throw APIError.badRequest("q must be an id: 1–512 bytes, no control characters") }
        return trimmed
    }
}
