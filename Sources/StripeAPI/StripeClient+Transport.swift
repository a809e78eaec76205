import AsyncHTTPClient
import Foundation
import Metrics
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

extension StripeClient {
    /// Sends one request, retrying what is worth retrying, and decodes the answer.
    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: StripeForm = StripeForm(), body: StripeForm? = nil, idempotencyKey: String? = nil,
        operation: String
    ) async throws(StripeAPIError) -> Response {
        var attempt = 0
        while true {
            await limiter?.acquire()
            do {
                let response: Response = try await sendOnce(method, path, query: query, body: body, idempotencyKey: idempotencyKey)
                Counter(label: "storekeeper_stripe_api_calls_total", dimensions: [("operation", operation), ("outcome", "ok")]).increment()
                return response
            } catch {
                Counter(label: "storekeeper_stripe_api_calls_total", dimensions: [("operation", operation), ("outcome", error.error.kind.rawValue)])
                    .increment()
                guard error.error.isRetryable, attempt < retryDelays.count else { throw error.error }
                let wait = error.retryAfter.map { min($0, .seconds(60)) } ?? retryDelays[attempt]
                logger.notice(
                    "Stripe API request will be retried",
                    metadata: ["stripe.path": "\(path)", "stripe.error": "\(error.error)", "stripe.attempt": "\(attempt + 1)"])
                try? await Task.sleep(for: wait)
                attempt += 1
            }
        }
    }

    struct Failure: Error {
        var error: StripeAPIError
        var retryAfter: Duration?
    }

    /// Stripe's error envelope.
    struct ErrorEnvelope: Decodable {
        struct Detail: Decodable {
            var type: String?
            var code: String?
            var message: String?
        }
        var error: Detail
    }

    private func sendOnce<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, query: StripeForm, body: StripeForm?, idempotencyKey: String?
    ) async throws(Failure) -> Response {
        var request = HTTPClientRequest(url: baseURL + path + (query.pairs.isEmpty ? "" : "?" + query.encoded))
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        request.headers.add(name: "Stripe-Version", value: Self.apiVersion)
        request.headers.add(name: "User-Agent", value: "storekeeper")
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: body.encoded))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await httpClient.execute(request, timeout: timeout)
            bytes = try await response.body.collect(upTo: 8 << 20)
        } catch {
            throw Failure(error: StripeAPIError(.unavailable, "\(method) \(path) failed: \(error)"))
        }
        let data = Data(buffer: bytes)
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            let detail = try? JSONDecoder().decode(ErrorEnvelope.self, from: data).error
            let message = "\(method) \(path): \(status) \(detail?.message ?? response.status.reasonPhrase)"
            let kind: StripeAPIError.Kind = status == 404 ? .notFound : (status == 429 || status >= 500) ? .unavailable : .refused
            var retryAfter: Duration?
            if let header = response.headers.first(name: "Retry-After"), let seconds = Double(header), seconds >= 0, seconds < 3600 {
                retryAfter = .milliseconds(Int64(seconds * 1000))
            }
            throw Failure(error: StripeAPIError(kind, message, httpStatus: status, code: detail?.code), retryAfter: retryAfter)
        }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw Failure(
                error: StripeAPIError(.invalidResponse, "\(method) \(path): the answer is not the documented JSON (\(error))", httpStatus: status))
        }
    }
}
