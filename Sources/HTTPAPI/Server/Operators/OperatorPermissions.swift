import Application
import HTTPTypes

/// The role each admin route needs, in one place. Reading (GET, HEAD) needs `viewer`; the writes a support desk makes
/// for a customer are listed here and need `support`; every other write — one added later and not listed included —
/// needs `admin`, so a forgotten entry fails closed. `docs/openapi.json` gives each operation's role as
/// `x-storekeeper-role`, and `OperatorRolesTests` holds the two to each other.
enum OperatorPermissions {
    /// `METHOD /route` of the writes `support` may make.
    static let supportWrites: Set<String> = [
        "POST /admin/accounts/{accountId}/grants", "DELETE /admin/grants/{grantId}",
        "POST /admin/accounts/{accountId}/grant", "POST /admin/grants/{grantId}/end",
        "POST /admin/events/{id}/redeliver", "POST /admin/deliveries/{id}/redeliver",
        "POST /admin/accounts/{accountId}/credits", "POST /admin/accounts/{accountId}/credit",
        "POST /admin/accounts/{accountId}/extensions", "POST /admin/accounts/{accountId}/extend",
    ]

    /// The least role that may send `method` to `route` (the router's path, `{parameter}` for each capture).
    static func requiredRole(method: HTTPRequest.Method, route: String) -> OperatorRole {
        if method == .get || method == .head { return .viewer }
        return supportWrites.contains("\(method.rawValue) \(route)") ? .support : .admin
    }
}
