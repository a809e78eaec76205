import AsyncHTTPClient
import Foundation
import NIOCore
import SignedData

/// OCSP over HTTP with AsyncHTTPClient, as Apple's library does it: POST `application/ocsp-request`, at most 1 MiB
/// back. Any transport failure or non-200 answer throws, which the verifier reports as retryable.
struct HTTPOCSPTransport: OCSPTransport {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let client: HTTPClient

    init(client: HTTPClient = .shared) { self.client = client }

    func fetch(request: [UInt8], responderURI: String) async throws -> [UInt8] {
        var httpRequest = HTTPClientRequest(url: responderURI)
        httpRequest.method = .POST
        httpRequest.headers.add(name: "Content-Type", value: "application/ocsp-request")
        httpRequest.headers.add(name: "Accept", value: "application/ocsp-response")
        httpRequest.body = .bytes(ByteBuffer(bytes: request))
        let response = try await client.execute(httpRequest, timeout: .seconds(30))
        guard response.status == .ok else { throw Failure(description: "OCSP responder answered \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        return Array(buffer: body)
    }
}
