import AsyncHTTPClient
import Foundation
import GooglePlay
import Logging
import Metrics
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import StatementFencing

/// The Play Developer API (androidpublisher v3) as the worker uses it: bearer tokens from ``GoogleAccessTokens``,
/// requests paced under the per-minute quota, a timeout per request, retries with backoff on 429, 5xx and transport
/// failures (after `Retry-After` when given), a new token after a 401, and Google's error envelope read into one
/// error type.
public struct GooglePlayClient: Sendable {
    /// Google's host; `STOREKEEPER_GOOGLE_PLAY_API_URL` points elsewhere (a fake) in tests.
    public static let googleHost = "https://androidpublisher.googleapis.com"

    let baseURL: String
    let packageName: String
    let tokens: GoogleAccessTokens
    let pacer: GooglePlayPacer
    let httpClient: HTTPClient
    let timeout: Duration
    let retryDelays: [Duration]
    let logger: Logger

    public init(
        baseURL: String = googleHost, packageName: String, tokens: GoogleAccessTokens, requestsPerMinute: Int = 3000,
        httpClient: HTTPClient = .shared, timeout: Duration = .seconds(15),
        retryDelays: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)], logger: Logger
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.packageName = packageName
        self.tokens = tokens
        self.pacer = GooglePlayPacer(requestsPerMinute: requestsPerMinute)
        self.httpClient = httpClient
        self.timeout = timeout
        self.retryDelays = retryDelays
        self.logger = logger
    }

    /// `purchases.subscriptionsv2.get`: the token's state now, and the answer's bytes as received (what is stored).
    public func subscription(_ purchaseToken: String) async throws(GooglePlayAPIError) -> (purchase: SubscriptionPurchaseV2, body: [UInt8]) {
        let body = try await send(.GET, "purchases/subscriptionsv2/tokens/\(Self.pathComponent(purchaseToken))", operation: "subscriptionsv2.get")
        do {
            return (try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(body)), body)
        } catch {
            throw GooglePlayAPIError(.invalidResponse, "subscriptionsv2.get: the answer is not a SubscriptionPurchaseV2 (\(error))")
        }
    }

    /// `purchases.subscriptions.acknowledge`: tells Google the purchase was granted, so it is not refunded after three
    /// days. `productId` is the subscription's product id (without the base plan).
    public func acknowledge(subscription productId: String, token purchaseToken: String) async throws(GooglePlayAPIError) {
        _ = try await send(
            .POST, "purchases/subscriptions/\(Self.pathComponent(productId))/tokens/\(Self.pathComponent(purchaseToken)):acknowledge",
            body: Array("{}".utf8), operation: "subscriptions.acknowledge")
    }

    /// A path segment: purchase tokens are URL-safe already; anything else is percent-encoded.
    static func pathComponent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Sends one request under `applications/{packageName}/`, retrying what is worth retrying; the answer's bytes.
    func send(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, operation: String) async throws(GooglePlayAPIError) -> [UInt8] {
        var attempt = 0
        var renewedToken = false
        while true {
            await pacer.acquire()
            do {
                let answer = try await sendOnce(method, path, body: body)
                Counter(label: "storekeeper_google_api_calls_total", dimensions: [("operation", operation), ("outcome", "ok")]).increment()
                return answer
            } catch {
                Counter(label: "storekeeper_google_api_calls_total", dimensions: [("operation", operation), ("outcome", error.error.kind.rawValue)])
                    .increment()
                if error.error.httpStatus == 401, !renewedToken, let token = error.token {
                    renewedToken = true
                    await tokens.invalidate(token)
                    continue
                }
                guard error.error.isRetryable, attempt < retryDelays.count else { throw error.error }
                let wait = error.retryAfter.map { min($0, .seconds(60)) } ?? retryDelays[attempt]
                logger.notice(
                    "Play Developer API request will be retried",
                    metadata: ["google.operation": "\(operation)", "google.error": "\(error.error)", "google.attempt": "\(attempt + 1)"])
                try? await Task.sleep(for: wait)
                attempt += 1
            }
        }
    }

    struct Failure: Error {
        var error: GooglePlayAPIError
        var retryAfter: Duration?
        /// The access token the request carried.
        var token: String?
    }

    /// Google's error envelope: `{"error": {"code", "message", "status", "errors": [{"reason", …}]}}`.
    struct ErrorEnvelope: Decodable {
        struct Detail: Decodable {
            var code: Int?
            var message: String?
            var status: String?
        }
        var error: Detail
    }

    private func sendOnce(_ method: HTTPMethod, _ path: String, body: [UInt8]?) async throws(Failure) -> [UInt8] {
        let token: String
        do { token = try await tokens.token() } catch { throw Failure(error: error, token: nil) }
        var request = HTTPClientRequest(url: "\(baseURL)/androidpublisher/v3/applications/\(Self.pathComponent(packageName))/\(path)")
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "User-Agent", value: "storekeeper")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            // Head and body within one deadline: AsyncHTTPClient's timeout ends with the head, and a body trickled
            // byte by byte would otherwise hold the job until the read timeout, again on every retry.
            (response, bytes) = try await withDeadline(timeout) { [httpClient, timeout, request] in
                let response = try await httpClient.execute(request, timeout: .nanoseconds(timeout.nanoseconds))
                do {
                    return (response, try await response.body.collect(upTo: 4 << 20))
                } catch is NIOTooManyBytesError {
                    throw GooglePlayAPIError(
                        .invalidResponse, "\(method) \(path): the answer is larger than 4 MiB", httpStatus: Int(response.status.code))
                }
            }
        } catch let error as GooglePlayAPIError {
            throw Failure(error: error, token: token)
        } catch {
            throw Failure(error: GooglePlayAPIError(.unavailable, "\(method) \(path) failed: \(error)"), token: token)
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            let detail = try? JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: bytes)).error
            let message = "\(method) \(path): \(status) \(detail?.status ?? "") \(detail?.message ?? response.status.reasonPhrase)"
            let kind: GooglePlayAPIError.Kind =
                switch status {
                case 404, 410: .notFound
                case 401, 403: .unauthorized
                case 429, 500...: .unavailable
                default: .refused
                }
            var retryAfter: Duration?
            if let header = response.headers.first(name: "Retry-After"), let seconds = Double(header), seconds >= 0, seconds < 3600 {
                retryAfter = .milliseconds(Int64(seconds * 1000))
            }
            throw Failure(error: GooglePlayAPIError(kind, message, httpStatus: status), retryAfter: retryAfter, token: token)
        }
        return Array(buffer: bytes)
    }
}

/// Paces a process's Play requests evenly under the per-minute quota (3,000 queries a minute per bucket by default),
/// so a burst of notifications or a `google sync` spends no retries on 429s.
actor GooglePlayPacer {
    private let interval: Duration
    private var next = ContinuousClock.now

    init(requestsPerMinute: Int) {
        interval = .nanoseconds(60_000_000_000 / Int64(max(requestsPerMinute, 1)))
    }

    func acquire() async {
        let now = ContinuousClock.now
        let turn = max(next, now)
        next = turn + interval
        if turn > now { try? await Task.sleep(until: turn, clock: .continuous) }
    }
}
