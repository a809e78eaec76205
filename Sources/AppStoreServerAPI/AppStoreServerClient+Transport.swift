import AppStoreModels
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SignedData

extension AppStoreServerClient {
    struct NoBody: Encodable {}

    /// Sends one request, retrying retryable failures after ``retryDelays``, and decodes the answer.
    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: some Encodable = NoBody(), environment: AppStoreEnvironment
    ) async throws(AppStoreServerError) -> Response {
        var attempt = 0
        while true {
            do {
                return try await sendOnce(method, path, body: body, environment: environment)
            } catch {
                guard error.isRetryable, attempt < retryDelays.count else { throw error }
                logger.notice(
                    "App Store Server API request will be retried",
                    metadata: ["api.path": "\(path)", "api.error": "\(error)", "api.attempt": "\(attempt + 1)"])
                try? await Task.sleep(for: retryDelays[attempt])
                attempt += 1
            }
        }
    }

    private func sendOnce<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: some Encodable, environment: AppStoreEnvironment
    ) async throws(AppStoreServerError) -> Response {
        var request = HTTPClientRequest(url: baseURL(for: environment) + path)
        request.method = method
        let token: String
        do { token = try credentials.bearerToken(now: clock()) } catch {
            throw AppStoreServerError(.configuration, "cannot sign the API token: \(error)")
        }
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "User-Agent", value: "storekeeper")
        if !(body is NoBody) {
            guard let data = try? JSONEncoder().encode(body) else { throw AppStoreServerError(.invalidResponse, "request body does not encode") }
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: data))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await httpClient.execute(request, timeout: .seconds(30))
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw AppStoreServerError(.transport, "\(method) \(path) failed: \(error)")
        }
        let data = Data(buffer: bytes)
        guard (200..<300).contains(response.status.code) else {
            let apple = try? JSONDecoder().decode(ErrorResponse.self, from: data)
            throw AppStoreServerError(
                .api, "\(method) \(path): \(apple?.errorMessage ?? response.status.reasonPhrase)", apiCode: apple?.errorCode,
                httpStatus: Int(response.status.code))
        }
        if Response.self == Empty.self, data.isEmpty { return Empty() as! Response }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw AppStoreServerError(
                .invalidResponse, "\(method) \(path): the answer is not the documented JSON", httpStatus: Int(response.status.code))
        }
    }

    /// Runs a verification, turning its error into an ``AppStoreServerError``.
    func verified<Value>(_ verification: () async throws(VerificationError) -> Value) async throws(AppStoreServerError) -> Value {
        do { return try await verification() } catch {
            throw AppStoreServerError(.invalidResponse, "a signed item Apple returned failed verification: \(error)")
        }
    }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?&=+"))) ?? text
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
