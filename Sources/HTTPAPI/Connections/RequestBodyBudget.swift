import Hummingbird
import NIOCore
import Synchronization

/// The request-body memory one process may hold at once. Each body's first ``freeBytes`` are free — every real
/// notification and service call is far smaller — so a flood of large, slowly sent bodies cannot crowd out the
/// small ones; bytes beyond that are reserved as they arrive and released when the request is answered. A body
/// that does not fit is refused with 503 (Apple retries), and its connection closes, which frees its bytes.
public final class RequestBodyBudget: Sendable {
    /// Bytes of each body not counted against the budget.
    public static let freeBytes = 64 * 1024

    private let capacity: Int
    private let used = Mutex(0)

    public init(bytes: Int) { self.capacity = bytes }

    /// Thrown by a body's sequence when the budget cannot hold its next chunk.
    struct Exhausted: Error {}

    /// Bytes reserved now, for tests and metrics.
    var reservedBytes: Int { used.withLock { $0 } }

    fileprivate func reserve(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard used + bytes <= capacity else { return false }
            used += bytes
            return true
        }
    }

    fileprivate func release(_ bytes: Int) { used.withLock { $0 -= bytes } }
}

/// Counts one request's body against a ``RequestBodyBudget``.
final class BodyReservation: Sendable {
    private let budget: RequestBodyBudget
    /// Bytes received and bytes reserved so far.
    private let state = Mutex((received: 0, reserved: 0))

    init(budget: RequestBodyBudget) { self.budget = budget }

    /// Accounts for `bytes` more; throws when the budget cannot hold them.
    func receive(_ bytes: Int) throws {
        try state.withLock { state in
            state.received += bytes
            let needed = max(0, state.received - RequestBodyBudget.freeBytes) - state.reserved
            guard needed > 0 else { return }
            guard budget.reserve(needed) else { throw RequestBodyBudget.Exhausted() }
            state.reserved += needed
        }
    }

    /// Gives everything reserved back.
    func releaseAll() {
        let reserved = state.withLock { state in
            defer { state.reserved = 0 }
            return state.reserved
        }
        budget.release(reserved)
    }
}

/// Puts every request body of the routes behind it under a ``RequestBodyBudget``.
struct RequestBodyBudgetMiddleware<Context: RequestContext>: RouterMiddleware {
    let budget: RequestBodyBudget

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let reservation = BodyReservation(budget: budget)
        defer { reservation.releaseAll() }
        var request = request
        request.body = RequestBody(
            asyncSequence: request.body.map { chunk in
                try reservation.receive(chunk.readableBytes)
                return chunk
            })
        do {
            return try await next(request, context)
        } catch is RequestBodyBudget.Exhausted {
            var busy = APIError(.serviceUnavailable, code: "busy", message: "too many large request bodies at once; retry later")
            busy.closesConnection = true
            throw busy
        }
    }
}
