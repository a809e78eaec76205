import Application
import Foundation
import Hummingbird
import PayloadDecoding
import Persistence
import Subscriptions

/// `GET /admin/audit?from=&to=&operator=&account=&limit=&format=json|csv`: the audit log, newest first. On the
/// dashboard's routes, so a signed-in browser downloads the CSV; any role may read it.
struct AuditController: Sendable {
    let audit: OperatorActions

    struct Entry: Encodable {
        var id: Int64
        var at: Date
        var `operator`: String
        var role: String
        var action: String
        var request: String
        var status: Int
        @Nullable var accountId: String?
        @Nullable var target: String?
        @Nullable var before: JSONFragment?
        @Nullable var after: JSONFragment?

        init(_ action: OperatorAction) {
            id = action.id
            at = action.at
            self.operator = action.operatorName
            role = action.role
            self.action = action.action
            request = action.request
            status = action.status
            accountId = action.accountId
            target = action.target
            before = action.before.map(JSONFragment.init)
            after = action.after.map(JSONFragment.init)
        }
    }

    struct Log: ResponseEncodable { var actions: [Entry] }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("audit") { request, context -> Response in
            let parameters = request.formParameters
            let filter = try Self.filter(parameters)
            let csv = try Self.wantsCSV(parameters.get("format"))
            let actions = try await withDatabase { try await audit.actions(filter) }
            if csv {
                return try CSVTable(
                    header: ["id", "at", "operator", "role", "action", "request", "status", "account", "target", "before", "after"],
                    rows: actions.map {
                        [
                            String($0.id), $0.at.formatted(.iso8601), $0.operatorName, $0.role, $0.action, $0.request, String($0.status),
                            $0.accountId ?? "",
                            $0.target ?? "", $0.before ?? "", $0.after ?? "",
                        ]
                    }, filename: "storekeeper-audit.csv"
                ).response(from: request, context: context)
            }
            let body = try StorekeeperRequestContext.jsonEncoder.encode(Log(actions: actions.map(Entry.init)))
            return EventsController.json(String(decoding: body, as: UTF8.self))
        }
    }

    static func wantsCSV(_ format: String?) throws -> Bool {
        switch format {
        case nil, "json": return false
        case "csv": return true
        default: throw APIError.badRequest("format must be json or csv")
        }
    }

    static func filter(_ parameters: Parameters) throws -> OperatorActions.Filter {
        func time(_ name: String) throws -> Date? {
            guard let text = parameters.get(name) else { return nil }
            guard let date = RFC3339.date(text) else { throw APIError.badRequest("\(name) must be an RFC 3339 time") }
            return date
        }
        let (from, to) = (try time("from"), try time("to"))
        if let from, let to, from > to { throw APIError.badRequest("from must not be after to") }
        let name = parameters.get("operator")
        if let name, !name.isKey(maximumBytes: 64) { throw APIError.badRequest("operator must be an operator's name, 1–64 characters") }
        var account: AccountID?
        if let text = parameters.get("account") {
            guard let id = AccountID(text) else { throw APIError.badRequest("account: \(AccountID.rule)") }
            account = id
        }
        var before: Int64?
        if let text = parameters.get("before") {
            guard let id = Int64(text), id > 0 else { throw APIError.badRequest("before must be an entry's id, a positive integer") }
            before = id
        }
        let limit = try EventsController.limit(parameters.get("limit"), default: 100)
        return OperatorActions.Filter(from: from, to: to, operatorName: name, account: account, before: before, limit: limit)
    }
}

/// JSON text written as it is (the audit log's before and after, kept as JSON).
struct JSONFragment: Encodable, Sendable {
    var text: String

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)))
    }
}
