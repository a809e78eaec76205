import Application
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Persistence

/// Who sent an admin request: the name and role of the key it presented.
public struct OperatorIdentity: Sendable, Equatable {
    public var name: String
    public var role: OperatorRole
}

/// The door of every admin route: the key must be one of `STOREKEEPER_ADMIN_KEYS` (401 otherwise), its role at least
/// the one ``OperatorPermissions`` gives the route (403 otherwise), and a write that succeeds — or a read that noted
/// what it asked Apple — is appended to the audit log before it is answered, with what the route noted
/// (``OperatorAudit``), or a write's route alone. A change whose record
/// cannot be written is answered 500 `not_audited` and logged whole, so the server log keeps what the table could not.
/// The route runs with the operator's ``DashboardNotice`` signer bound, for the dashboard's notices.
struct OperatorMiddleware: RouterMiddleware {
    typealias Context = StorekeeperRequestContext

    private let operators: [OperatorIdentity]
    private let keys: KeyRing
    private let notices: [DashboardNotice]
    private let basicRealm: String?
    private let audit: OperatorActions
    private let clock: @Sendable () -> Date
    private let logger = Logger(label: "storekeeper.audit")

    init(operators: [OperatorKey], basicRealm: String? = nil, audit: OperatorActions, clock: @escaping @Sendable () -> Date) {
        self.operators = operators.map { OperatorIdentity(name: $0.name, role: $0.role) }
        self.keys = KeyRing(keys: operators.map(\.key))
        self.notices = operators.map { DashboardNotice(operatorKey: $0.key) }
        self.basicRealm = basicRealm
        self.audit = audit
        self.clock = clock
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let key = KeyRing.presentedKey(request, basic: basicRealm != nil), let position = keys.position(of: key) else {
            return try KeyRing.refusal(basicRealm: basicRealm, request: request, context: context)
        }
        let identity = operators[position]
        let route = context.endpointPath ?? request.uri.path
        let required = OperatorPermissions.requiredRole(method: request.method, route: route)
        guard identity.role >= required else {
            throw APIError(
                .forbidden, code: .forbidden,
                message:
                    "\(identity.name) is a \(identity.role.rawValue) key; \(request.method.rawValue) \(route) needs the \(required.rawValue) role")
        }
        var context = context
        context.operatorIdentity = identity
        let notes = OperatorAudit.Notes()
        let response = try await OperatorAudit.$notes.withValue(notes) {
            try await DashboardNotice.$current.withValue(notices[position]) { try await next(request, context) }
        }
        guard response.status.code < 400 else { return response }
        let (noted, unchanged) = notes.all
        // A read is logged only when its route noted something (it asked Apple); every successful write is.
        let reading = request.method == .get || request.method == .head
        guard !(noted.isEmpty && (unchanged || reading)) else { return response }
        let at = clock()
        let described = noted.isEmpty ? [OperatorAudit.Note(action: "\(request.method.rawValue) \(route)")] : noted
        let actions = described.map { note in
            OperatorAction(
                at: at, operatorName: identity.name, role: identity.role.rawValue, action: note.action,
                request: "\(request.method.rawValue) \(route)", status: Int(response.status.code), accountId: note.accountId, target: note.target,
                before: note.before, after: note.after)
        }
        do {
            try await withDatabase { try await audit.append(actions) }
        } catch {
            for action in actions {
                logger.error(
                    "an operator's change was made but not audited",
                    metadata: [
                        "operator": "\(action.operatorName)", "action": "\(action.action)", "request": "\(action.request)",
                        "account": "\(action.accountId ?? "")", "target": "\(action.target ?? "")", "before": "\(action.before ?? "null")",
                        "after": "\(action.after ?? "null")", "error": "\(String(reflecting: error))",
                    ])
            }
            throw APIError(
                .internalServerError, code: .notAudited,
                message: "the change was made, but its audit record could not be written (the server log has it); do not repeat it blindly")
        }
        return response
    }
}
