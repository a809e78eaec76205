import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// What the HTTP edge answers without a database, as the published document (`docs/openapi.json`'s description and
/// each operation's responses) says it must: the expectations are its words, not the code's.
@Suite("The HTTP edge, without a database")
struct EdgeAnswerTests {
    /// `{"error": "<code>", "message": "<text>"}` (the document's `Error`).
    struct ErrorBody: Decodable {
        var error: String
        var message: String
    }

    static func error(_ response: TestResponse) throws -> ErrorBody {
        try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
    }

    static let key: HTTPFields = [.authorization: "Bearer \(UnreachableDatabaseServer.apiKey)"]

    @Test("/healthz says the process is up; /readyz says not ready, within its 3 s, while the database is unreachable")
    func health() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            let live = try await client.execute(uri: "/healthz", method: .get)
            #expect(live.status == .ok)
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .serviceUnavailable)
            #expect(try Self.error(ready).error == "not_ready")
        }
    }

    @Test("the service API refuses a missing or wrong key: 401 unauthorized, as JSON, never cached")
    func serviceKey() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            for headers: HTTPFields in [[:], [.authorization: "Bearer wrong-key"], [.authorization: "Basic \(UnreachableDatabaseServer.apiKey)"]] {
                let answer = try await client.execute(uri: "/v1/accounts/a-1/status", method: .get, headers: headers)
                #expect(answer.status == .unauthorized)
                #expect(try Self.error(answer).error == "unauthorized")
                #expect(answer.headers[.contentType] == "application/json; charset=utf-8")
                #expect(answer.headers[.xContentTypeOptions] == "nosniff")
            }
        }
    }

    @Test("a path no route takes is 404 not_found; Stripe's webhook, not configured here, is 404 not_configured")
    func notFound() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            let nowhere = try await client.execute(uri: "/v1/nowhere", method: .get, headers: Self.key)
            #expect(nowhere.status == .notFound)
            #expect(try Self.error(nowhere).error == "not_found")
            let stripe = try await client.execute(uri: "/stripe/webhooks", method: .post, body: ByteBuffer(string: "{}"))
            #expect(stripe.status == .notFound)
            let body = try Self.error(stripe)
            #expect(body.error == "not_configured")
            #expect(body.message.contains("STOREKEEPER_STRIPE"), "the answer names what to set: \(body.message)")
        }
    }

    @Test("a route's path under another method is 405 method_not_allowed, with Allow")
    func wrongMethod() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            let answer = try await client.execute(uri: "/notifications/apple", method: .get)
            #expect(answer.status == .methodNotAllowed)
            #expect(try Self.error(answer).error == "method_not_allowed")
            #expect(answer.headers[.allow]?.contains("POST") == true)
        }
    }

    @Test("an Apple notification that is no JWS is 400 before anything is stored")
    func malformedNotification() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            for body in [#"{"signedPayload": "not-a-jws"}"#, #"{"other": 1}"#, "[]", "{"] {
                let answer = try await client.execute(
                    uri: "/notifications/apple", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
                #expect(answer.status == .badRequest, "\(body)")
                #expect(try Self.error(answer).message.isEmpty == false)
            }
        }
    }

    @Test("operators: no key is 401; a viewer may not write (403 forbidden); a write from another site is 403 cross_site")
    func operators() async throws {
        try await UnreachableDatabaseServer.withClient { client in
            let anonymous = try await client.execute(uri: "/admin/accounts/a-1/grants", method: .get)
            #expect(anonymous.status == .unauthorized)
            let grant = ByteBuffer(string: #"{"tier": "pro", "duration": "P1D", "reason": "route test"}"#)
            let viewer = try await client.execute(
                uri: "/admin/accounts/a-1/grants", method: .post,
                headers: [.authorization: "Bearer \(UnreachableDatabaseServer.viewerKey)", .contentType: "application/json"], body: grant)
            #expect(viewer.status == .forbidden)
            #expect(try Self.error(viewer).error == "forbidden")
            var crossSite: HTTPFields = [.authorization: "Bearer \(UnreachableDatabaseServer.adminKey)", .contentType: "application/json"]
            crossSite[HTTPField.Name("Sec-Fetch-Site")!] = "cross-site"
            let foreign = try await client.execute(uri: "/admin/accounts/a-1/grants", method: .post, headers: crossSite, body: grant)
            #expect(foreign.status == .forbidden)
            #expect(try Self.error(foreign).error == "cross_site")
        }
    }

    @Test("the served document describes this server as configured: no Stripe, no Google Play, no dev clock")
    func servedDocument() async throws {
        struct Document: Decodable { var paths: [String: PathItem] }
        /// Only which paths are there is read.
        struct PathItem: Decodable { init(from decoder: any Decoder) throws {} }
        try await UnreachableDatabaseServer.withClient { client in
            let answer = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(answer.status == .ok)
            let paths = Set(try JSONDecoder().decode(Document.self, from: Data(buffer: answer.body)).paths.keys)
            #expect(paths.contains("/v1/accounts/{accountId}/status"))
            #expect(paths.contains("/notifications/apple"))
            for absent in ["/stripe/webhooks", "/notifications/google", "/admin/dev/clock"] {
                #expect(!paths.contains(absent), "\(absent) is served but not configured")
            }
        }
    }
}
