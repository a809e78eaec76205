import Foundation
import Hummingbird

extension Request {
    /// The query as an HTML form sends it (`application/x-www-form-urlencoded`): `+` is a space, then percent-escapes
    /// are decoded. Hummingbird's `queryParameters` leaves `+` as it is, so a search box's "a b" — or a pasted id with a
    /// space around it — arrived as "a+b". Used by every route a `GET` form of the dashboard submits to.
    var formParameters: Parameters {
        guard let query = uri.query, !query.isEmpty else { return .init() }
        return .init(
            query.split(separator: "&").map { pair -> (key: Substring, value: Substring) in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ text: Substring) -> Substring {
                    let spaced = text.replacingOccurrences(of: "+", with: " ")
                    return (spaced.removingPercentEncoding ?? spaced)[...]
                }
                return (key: decoded(parts[0]), value: parts.count > 1 ? decoded(parts[1]) : "")
            })
    }
}
