import Hummingbird
import NIOCore
import Synchronization

/// The request-body memory one process may hold at once. Every byte of every body is reserved as it arrives and
/// released when its request is answered, so what bodies hold is bounded by this one figure whatever the number of
/// connections. A body that does not fit is refused with 503 (Apple retries), and its connection closes, which frees
/// its bytes.
///
/// No part of a body is free: with a free allowance per body, connections × allowance is unbounded by the budget
/// (4,000 stalled 62-KiB bodies took 570 MB). Small requests are protected instead by the budget being far larger than
/// any one legitimate body and by each body's deadline (`STOREKEEPER_HTTP_BODY_TIMEOUT`), which releases it.
///
/// Bodies nobody vouched for — the stores' intakes, which read a body before they can verify it — may hold at most
/// ``strangersShare`` of it: 32 stalled bodies of the largest size (512 KiB) filled all 16 MiB, and every spend, hold
/// and operator's form was refused 503 until their deadline. The rest is kept for the routes that check a service key
/// or an operator before any body is read (`/v1/…`, `/admin/…`).
public final class RequestBodyBudget: Sendable {
    private let capacity: Int
    private let used = Mutex(0)

    public init(bytes: Int) { self.capacity = bytes }

    /// What bodies nobody vouched for may hold together: three quarters of the budget.
    public var strangersShare: Int { capacity / 4 * 3 }

    /// Whether a request's body is read only after its sender was authenticated.
    enum Sender: Sendable {
        /// A service key or an operator was checked before any handler reads the body.
        case authenticated
        /// Anyone on the Internet: the stores' intakes, and whatever no route answers.
        case stranger
    }

    /// The most bodies of `sender`'s kind may take of the budget, together with everything reserved already.
    func limit(for sender: Sender) -> Int { sender == .authenticated ? capacity : strangersShare }

    /// Thrown by a body's sequence when the budget cannot hold its next chunk.
    struct Exhausted: Error {}

    /// Bytes reserved now, for tests and metrics.
    var reservedBytes: Int { used.withLock { $0 } }

    fileprivate func reserve(_ bytes: Int, upTo limit: Int) -> Bool {
        used.withLock { used in
            guard used + bytes <= limit else { return false }
            used += bytes
            return true
        }
    }

    fileprivate func release(_ bytes: Int) { used.withLock { $0 -= bytes } }
}

/// Counts one request's body against a ``RequestBodyBudget``.
final class BodyReservation: Sendable {
    private let budget: RequestBodyBudget
    /// The most the budget may hold with this body's next bytes (``RequestBodyBudget/limit(for:)``).
    private let limit: Int
    /// Bytes reserved so far.
    private let reserved = Mutex(0)

    init(budget: RequestBodyBudget, sender: RequestBodyBudget.Sender) {
        self.budget = budget
        self.limit = budget.limit(for: sender)
    }

    /// Accounts for `bytes` more; throws when the budget cannot hold them.
    func receive(_ bytes: Int) throws {
        try reserved.withLock { reserved in
            guard budget.reserve(bytes, upTo: limit) else { throw RequestBodyBudget.Exhausted() }
            reserved += bytes
        }
    }

    /// Gives everything reserved back.
    func releaseAll() {
        let bytes = reserved.withLock { reserved in
            defer { reserved = 0 }
            return reserved
        }
        budget.release(bytes)
    }
}

/// A body counted against a reservation as it is read. A failure of the connection below — the client went away or
/// broke the framing — is answered 400 and logged at debug: it is no failure of the server's.
struct CountedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let reservation: BodyReservation

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let reservation: BodyReservation

        mutating func next() async throws -> ByteBuffer? {
            let chunk: ByteBuffer?
            do {
                chunk = try await base.next()
            } catch {
                var unreadable = APIError.badRequest("the request body could not be read to its end")
                unreadable.closesConnection = true
                unreadable.cause = (.debug, "request body unreadable", String(reflecting: error))
                throw unreadable
            }
            if let chunk { try reservation.receive(chunk.readableBytes) }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), reservation: reservation) }
}

/// Puts every request body of the routes behind it under a ``RequestBodyBudget``.
struct RequestBodyBudgetMiddleware<Context: RequestContext>: RouterMiddleware {
    let budget: RequestBodyBudget

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let reservation = BodyReservation(budget: budget, sender: Self.sender(of: request))
        defer { reservation.releaseAll() }
        var request = request
        request.body = RequestBody(asyncSequence: CountedBody(base: request.body, reservation: reservation))
        do {
            return try await next(request, context)
        } catch is RequestBodyBudget.Exhausted {
            throw Self.busy
        }
    }

    /// A body the budget could not hold: 503 `busy`, and the connection closed, so the rest of the body is not read.
    static var busy: APIError {
        var busy = APIError(.serviceUnavailable, code: .busy, message: "too many large request bodies at once; retry later")
        busy.closesConnection = true
        return busy
    }

    /// By the path alone, before routing: the `/v1` and `/admin` groups check a service key or an operator before any
    /// of their handlers reads a body, so a body under them is read only for a sender who was authenticated.
    static func sender(of request: Request) -> RequestBodyBudget.Sender {
        let path = request.uri.path
        return path.hasPrefix("/v1/") || path.hasPrefix("/admin/") ? .authenticated : .stranger
    }
}
