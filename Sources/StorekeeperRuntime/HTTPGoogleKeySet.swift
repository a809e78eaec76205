import AsyncHTTPClient
import Foundation
import NIOCore
import SignedData
import StatementFencing

/// Google's signing keys read over HTTP with AsyncHTTPClient (`STOREKEEPER_GOOGLE_CERTS_URL`): at most 256 KiB back,
/// head and body within 5 seconds in all — a body trickled byte by byte must not hold up the pushes waiting for it
/// (Pub/Sub's default acknowledgement deadline is 10 s). Any failure throws; the verifier then keeps the keys it
/// holds, or answers 503.
struct HTTPGoogleKeySet: GoogleKeySetSource {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let url: String
    let client: HTTPClient

    init(url: String, client: HTTPClient = .shared) {
        self.url = url
        self.client = client
    }

    func keySetDocument() async throws -> [UInt8] {
        let (url, client) = (self.url, self.client)
        return try await withDeadline(.seconds(5)) {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: .seconds(5))
            guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status.code)") }
            return Array(buffer: try await response.body.collect(upTo: 256 << 10))
        }
    }
}
