import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

// Requests of the service API with the test key, as the app's backend sends them.
extension TestClientProtocol {
    /// POSTs a usage request with the test key.
    func spend(_ account: UUID, meter: String = "ai_requests", amount: Int64, key: String = UUID().uuidString) async throws -> TestResponse {
        try await execute(
            uri: "/v1/accounts/\(account)/usage", method: .post,
            headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"meter": "\#(meter)", "amount": \#(amount), "idempotencyKey": "\#(key)"}"#))
    }

    /// POSTs a signed transaction for an account with the test key.
    func postTransaction(_ signedTransaction: String, account: some CustomStringConvertible) async throws -> TestResponse {
        try await execute(
            uri: "/v1/accounts/\(account)/transactions", method: .post,
            headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONEncoder().encode(["signedTransaction": signedTransaction])))
    }

    /// Sends a JSON body to a service API path with the test key.
    func withKey(_ method: HTTPRequest.Method, _ uri: String, _ json: String) async throws -> TestResponse {
        try await execute(
            uri: uri, method: method, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(string: json))
    }
}
