import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// The admin API and dashboard as a hostile page in the operator's browser would try them, and the headers every
/// answer carries. Expectations from issue 20: Basic credentials only for the dashboard, no cross-site writes, only
/// JSON or the dashboard's form, `nosniff` everywhere and `no-store` on authenticated answers.
@Suite("HTTP hardening")
struct HTTPHardeningTests {
    static let admin = "admin-key"
    static let environment = ["STOREKEEPER_ADMIN_KEYS": admin, "STOREKEEPER_METRICS_KEYS": "metrics-key"]
    static let basic = "Basic " + Data(":\(admin)".utf8).base64EncodedString()
    static let requeue = ByteBuffer(string: #"{"state": "failed"}"#)

    static let adminWrites: [(String, [HTTPField.Name: String], HTTPResponse.Status)] = [
        ("/admin/jobs/requeue", [.authorization: basic, .contentType: "text/plain"], .unauthorized),
        ("/admin/jobs/1/cancel", [.authorization: basic], .unauthorized),
        ("/admin/jobs/requeue", [.authorization: "Bearer \(admin)", .contentType: "application/json", .origin: "https://evil.example"], .forbidden),
        (
            "/admin/jobs/requeue",
            [.authorization: "Bearer \(admin)", .contentType: "application/json", HTTPField.Name("Sec-Fetch-Site")!: "cross-site"], .forbidden
        ),
        ("/admin/jobs/requeue", [.authorization: "Bearer \(admin)", .contentType: "text/plain"], .unsupportedMediaType),
        ("/admin/jobs/requeue", [.authorization: "Bearer \(admin)", .contentType: "application/json"], .ok),
        (
            "/admin/jobs/1/requeue", [.authorization: basic, .contentType: "application/x-www-form-urlencoded", .origin: "https://evil.example"],
            .forbidden
        ),
        ("/admin/jobs/1/requeue", [.authorization: basic, .contentType: "text/plain"], .unsupportedMediaType),
        ("/admin/jobs/1/requeue", [.authorization: basic, .contentType: "application/x-www-form-urlencoded"], .seeOther),
    ]

    @Test("state-changing admin requests: bearer only on the JSON API, same site only, JSON or the dashboard's form only")
    func adminWrites() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                for (path, headers, expected) in Self.adminWrites {
                    var fields = HTTPFields()
                    for (name, value) in headers { fields[name] = value }
                    let response = try await client.execute(uri: path, method: .post, headers: fields, body: Self.requeue)
                    #expect(response.status == expected, "\(path) \(headers.keys.map(\.rawName))")
                    #expect(response.headers[.xContentTypeOptions] == "nosniff")
                }
            }
        }
    }

    @Test("nosniff on every answer, no-store on authenticated ones, a keyed /metrics, NUL bytes and oversized ids are 400")
    func headersAndSmallerHoles() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                for path in ["/healthz", "/no-such-page", "/v1/tiers", "/admin/stats"] {
                    #expect(try await client.execute(uri: path, method: .get).headers[.xContentTypeOptions] == "nosniff", "\(path)")
                }
                let status = try await client.getWithKey("/v1/accounts/\(UUID())/status")
                #expect(status.headers[.cacheControl] == "no-store")
                let dashboard = try await client.execute(uri: "/admin", method: .get, headers: [.authorization: Self.basic])
                #expect(dashboard.status == .ok && dashboard.headers[.cacheControl] == "no-store")
                #expect(try await client.execute(uri: "/admin/stats", method: .get, headers: [.authorization: Self.basic]).status == .unauthorized)
                #expect(try await client.execute(uri: "/metrics", method: .get).status == .unauthorized)
                #expect(try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer metrics-key"]).status == .ok)
                let kind = try await client.execute(uri: "/admin/jobs?kind=%00", method: .get, headers: [.authorization: "Bearer \(Self.admin)"])
                #expect(kind.status == .badRequest)
                // An idempotency key is 1–255 bytes without control characters: C0, DEL and C1 alike.
                func spend(key: String) async throws -> (HTTPResponse.Status, String) {
                    let body = #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(key)"}"#
                    let usage = try await client.execute(
                        uri: "/v1/accounts/\(UUID())/usage", method: .post,
                        headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                        body: ByteBuffer(string: body))
                    return (usage.status, String(buffer: usage.body))
                }
                for key in [
                    #"a\u0000b"#, #"a\u001fb"#, #"a\u007fb"#, #"a\u0085b"#, #"\u009f"#, String(repeating: "k", count: 256),
                    "é" + String(repeating: "k", count: 254),
                ] {
                    let (status, body) = try await spend(key: key)
                    #expect(status == .badRequest && body.contains("invalid_idempotency_key"), "\(key): \(status) \(body)")
                }
                for key in ["k", #"a\u00a0b"#, "zé", "日本", String(repeating: "k", count: 255), "~ !", "é" + String(repeating: "k", count: 253)] {
                    let (status, body) = try await spend(key: key)
                    #expect(status != .badRequest, "\(key): \(status) \(body)")
                }
                // Path parameters arrive percent-encoded: `%00` is three characters, not NUL. An id past 256 bytes is 400.
                #expect(try await client.getWithKey("/v1/subscriptions/a%00b").status == .notFound)
                #expect(try await client.getWithKey("/v1/subscriptions/" + String(repeating: "9", count: 300)).status == .badRequest)
                // An account id's escapes are decoded; a malformed one is refused, never taken as the id's own text.
                for malformed in ["%ZZ", "%", "%2", "abc%", "%C3", "%FF"] {
                    #expect(try await client.getWithKey("/v1/accounts/\(malformed)/status").status == .badRequest, "\(malformed)")
                }
                let encoded = try await client.getWithKey("/v1/accounts/user%40example/status")
                #expect(encoded.status == .ok)
                #expect(try encoded.answer(StatusAnswer.self).accountId == "user@example")
            }
        }
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
