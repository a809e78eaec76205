import HTTPTypes
import Hummingbird

/// Answers a request no route takes with the API's JSON error: 405 `method_not_allowed` with `Allow` when its path is
/// a route's under another method, else 404 `not_found` — where Hummingbird answers an empty 404 for both. Added
/// last, after every route, so only the router's not-found answer passes through it.
struct UnknownRouteMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route's path, split into segments, with its method.
    let routes: [(segments: [Substring], method: HTTPRequest.Method)]
    /// Path patterns of features this server was not configured for (as route paths: `{}` one segment, `**` the
    /// rest), each with what to set: their routes are not served (nor in the served document), and a request for one
    /// is told why — a 404, never a 5xx, since asking again changes nothing.
    let unconfigured: [(segments: [Substring], hint: String)]

    init(routes: [Router<Context>.RouteDescription], unconfigured: [(pattern: String, hint: String)] = []) {
        self.routes = routes.map { (Self.segments($0.path.description), $0.method) }
        self.unconfigured = unconfigured.map { (Self.segments($0.pattern), $0.hint) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            var refusal = refusal(request)
            // No route takes CONNECT, and NIO writes the answer to one without a length (a tunnel's answer has no
            // body that ends): the close is what ends it for the client (helper-156).
            refusal.closesConnection = request.method == .connect
            throw refusal
        }
    }

    /// Why no route takes `request`.
    func refusal(_ request: Request) -> APIError {
        let path = Self.segments(request.uri.path)
        var allowed = Set(Self.preferred(routes.filter { Self.matches($0.segments, path) }).map(\.method.rawValue))
        // The router answers HEAD wherever GET is routed (`autoGenerateHeadEndpoints`).
        if allowed.contains("GET") { allowed.insert("HEAD") }
        guard !allowed.isEmpty else {
            if let feature = unconfigured.first(where: { Self.matches($0.segments, path) }) {
                return APIError(.notFound, code: .notConfigured, message: feature.hint)
            }
            return APIError(.notFound, code: .notFound, message: "no route \(request.method) \(request.uri.path)")
        }
        var refused = APIError(
            .methodNotAllowed, code: .methodNotAllowed,
            message: "\(request.method) is not allowed on \(request.uri.path); allowed: \(allowed.sorted().joined(separator: ", "))")
        refused.headers[.allow] = allowed.sorted().joined(separator: ", ")
        return refused
    }

    /// The routes the router would choose among: at each segment a literal takes precedence over a parameter (its
    /// trie does not fall back), so `/admin/jobs/requeue` is the literal route's path only, not also `/admin/jobs/{id}`.
    static func preferred(_ matching: [(segments: [Substring], method: HTTPRequest.Method)]) -> [(segments: [Substring], method: HTTPRequest.Method)]
    {
        var candidates = matching
        var index = 0
        while candidates.contains(where: { index < $0.segments.count }) {
            if candidates.contains(where: { index < $0.segments.count && isLiteral($0.segments[index]) }) {
                candidates = candidates.filter { index < $0.segments.count && isLiteral($0.segments[index]) }
            }
            index += 1
        }
        return candidates
    }

    static func isLiteral(_ segment: Substring) -> Bool {
        !(segment == "*" || segment == "**" || segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")))
    }

    static func segments(_ path: String) -> [Substring] { path.split(separator: "/", omittingEmptySubsequences: true) }

    /// Whether `path` is one of `route`'s paths: `{name}`, `:name` and `*` take any one segment, `**` the rest.
    static func matches(_ route: [Substring], _ path: [Substring]) -> Bool {
        for (index, segment) in route.enumerated() {
            if segment == "**" { return true }
            guard index < path.count else { return false }
            if segment == "*" || segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) { continue }
            guard segment == path[index] else { return false }
        }
        return route.count == path.count
    }
}
