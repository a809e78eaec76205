import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Counts and times every request by route, method and status, under the names of Hummingbird's `MetricsMiddleware`
/// (`hb_requests`, `http_server_request_duration`, `hb_request_errors`, `http_server_active_requests`), without
/// wrapping the answer's body.
///
/// Hummingbird's middleware records after the body is written, by wrapping every body in a writing closure. A body
/// held whole (every answer of this server) then goes out as three writes — head, body, end — each a hop to the
/// connection's event loop and a flush, where Hummingbird otherwise writes the three in one (docs/capacity.md, "One
/// write an answer"). Here the time ends when the handler has its answer, before it is written; and a HEAD request,
/// whose answer drops its GET's body (and with it Hummingbird's closure), is counted and leaves the active-requests
/// gauge as any other.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics = RequestMetrics()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = DispatchTime.now().uptimeNanoseconds
        let active = metrics.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            let route = metrics.route(context.endpointPath ?? "Unknown", request.method, response.status)
            route.requests.increment()
            route.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let route = metrics.route(context.endpointPath ?? "NotFound", request.method, status)
            route.requests.increment()
            route.errors.increment()
            throw error
        }
    }
}

/// The metrics of each method and route, made once: a metrics factory's lookup by label and dimensions costs more
/// than a dictionary's.
final class RequestMetrics: Sendable {
    struct Route: Sendable {
        let requests: Counter
        let duration: Timer
        let errors: Counter
    }

    private struct RouteKey: Hashable {
        let endpoint: String
        let method: String
        let status: HTTPResponse.Status
    }

    private let meters = Mutex<[String: Meter]>([:])
    private let routes = Mutex<[RouteKey: Route]>([:])

    /// HTTP's own methods by name, and `_OTHER` for any other (OpenTelemetry's convention): the HTTP parser passes two
    /// dozen more (WebDAV's and others'), each of which would otherwise be series of its own on every unknown path.
    static func methodName(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .delete, .connect, .options, .trace, .patch: method.rawValue
        default: "_OTHER"
        }
    }

    /// The requests of `method` being answered.
    func active(_ method: HTTPRequest.Method) -> Meter {
        let name = Self.methodName(method)
        return meters.withLock { meters in
            if let meter = meters[name] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", name)])
            meters[name] = meter
            return meter
        }
    }

    /// The metrics of `endpoint` answered with `status`.
    func route(_ endpoint: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Route {
        let key = RouteKey(endpoint: endpoint, method: Self.methodName(method), status: status)
        return routes.withLock { routes in
            if let route = routes[key] { return route }
            let dimensions = [("http.route", endpoint), ("http.request.method", key.method)]
            let statusCode = String(status.code)
            let route = Route(
                requests: Counter(label: "hb.requests", dimensions: dimensions + [("http.response.status_code", statusCode)]),
                duration: Timer(
                    label: "http.server.request.duration", dimensions: dimensions + [("http.response.status_code", statusCode)],
                    preferredDisplayUnit: .seconds),
                errors: Counter(label: "hb.request.errors", dimensions: dimensions + [("error.type", statusCode)]))
            routes[key] = route
            return route
        }
    }
}
