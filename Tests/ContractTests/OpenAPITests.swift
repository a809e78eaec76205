import Crypto
import Foundation
import GooglePlayFake
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import StorekeeperRuntime
import Synchronization
import TestSupport
import Testing

@testable import IntegrationSupport

/// `docs/openapi.json` is what `GET /openapi.json` serves, names every route of the router (and no other), and
/// describes real answers: each status, content type and body below is checked against it by the `jsonschema`
/// library (PyPI), which knows nothing of our code.
@Suite("The OpenAPI document: served, true to the router and to real answers")
struct OpenAPITests {
    static let file = AppleSamples.repository.appendingPathComponent("docs/openapi.json")
    static let adminKey = "admin-key"
    /// Every optional feature on but the App Store Server API (so what support would ask Apple is refused as documented).
    static let environment = [
        "STOREKEEPER_ADMIN_KEYS": adminKey, "STOREKEEPER_OFFERS": StorekeeperHarness.offers,
        "STOREKEEPER_RETENTION": "default: { message: 6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10 }",
        "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": "whsec_openapi_test_secret",
        "STOREKEEPER_GOOGLE_PACKAGE_NAME": "com.example.app", "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": "https://example.com/notifications/google",
        "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": "push@example.iam.gserviceaccount.com",
        "STOREKEEPER_WEBHOOKS": "{endpoints: [{name: app, url: 'http://127.0.0.1:9/hook', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']}]}",
    ]

    /// ``environment`` and an In-App Purchase key, which turns offer signing on (its routes are served only then):
    /// every route exists. Apple is not called.
    static var everyFeature: [String: String] {
        environment.merging([
            "STOREKEEPER_ASSA_ISSUER_ID": "issuer", "STOREKEEPER_ASSA_KEY_ID": "KEY", "STOREKEEPER_ASSA_PRIVATE_KEY": inAppPurchaseKey,
            "STOREKEEPER_ASSA_BASE_URL": "http://127.0.0.1:1",
            // Stripe's API key (checkout, portal) and Play's service account (claims): their routes are served only then.
            "STOREKEEPER_STRIPE_API_KEY": "sk_test_openapi", "STOREKEEPER_STRIPE_BASE_URL": "http://127.0.0.1:1",
            "STOREKEEPER_GOOGLE_SERVICE_ACCOUNT": playServiceAccount, "STOREKEEPER_GOOGLE_PLAY_API_URL": "http://127.0.0.1:1",
        ]) { _, new in new }
    }

    /// A throwaway Play service-account key file's path, as Google Cloud gives one.
    static let playServiceAccount: String = {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("play_openapi_\(UUID().uuidString).json")
        let key = (try? FakeGooglePlay())?.serviceAccountKeyFile(tokenURI: "http://127.0.0.1:1/token") ?? []
        try? Data(key).write(to: file)
        return file.path
    }()

    /// A throwaway In-App Purchase key's path.
    static let inAppPurchaseKey: String = {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_openapi_\(UUID().uuidString).p8")
        try? P256.Signing.PrivateKey().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        return key.path
    }()

    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    @Test("GET /openapi.json is docs/openapi.json, byte for byte, with every feature on, read from the build's resource folder")
    func served() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.everyFeature) { harness in
            var components = harness.components
            components.devClock = DevClock()
            try await Application(router: components.router()).test(.router) { client in
                let response = try await client.execute(uri: "/openapi.json", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let file = try String(contentsOf: Self.file, encoding: .utf8)
                #expect(String(buffer: response.body) == file)
            }
            // SwiftPM copied the resource beside the test binary: the source tree's copy (the last place looked) is not
            // what passed this test.
            #expect(OpenAPIDocument.locations.dropLast().contains { FileManager.default.fileExists(atPath: $0.path) })
        }
    }

    @Test("a production-shaped server serves a document of exactly its routes; a feature left off is a 404 that says what to set, never a 5xx")
    func servedAsConfigured() async throws {
        // No Stripe, no Play, no In-App Purchase key (so no offers), no Retention Messaging, not `dev`.
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            let router = harness.components.router()
            let routes = Set(router.routes.map { ReadmeTablesTests.normalized($0.method.rawValue, $0.path.description) })
            try await Application(router: router).test(.router) { client in
                let response = try await client.execute(uri: "/openapi.json", method: .get)
                let document = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                let paths = try #require(document["paths"] as? [String: [String: Any]])
                let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
                let served = Set(
                    paths.flatMap { path, item in
                        item.keys.filter(methods.contains).map { ReadmeTablesTests.normalized($0.uppercased(), path) }
                    })
                #expect(
                    served == routes,
                    "served operations \(served.subtracting(routes).sorted()), routes undocumented \(routes.subtracting(served).sorted())")
                for off in [
                    "POST /stripe/webhooks", "POST /notifications/google", "POST /v1/offers/promotional", "POST /apple/retention-message",
                    "GET /admin/dev/clock",
                ] {
                    #expect(!served.contains(off), "\(off) is off here")
                }
                // Every link names an operation the document still has.
                let operations = paths.values.flatMap { item in methods.compactMap { (item[$0] as? [String: Any])?["operationId"] as? String } }
                let linked = paths.values.flatMap { item in
                    methods.compactMap { item[$0] as? [String: Any] }.flatMap { operation in
                        ((operation["responses"] as? [String: Any]) ?? [:]).values.flatMap { response in
                            (((response as? [String: Any])?["links"] as? [String: Any]) ?? [:]).values.compactMap {
                                ($0 as? [String: Any])?["operationId"] as? String
                            }
                        }
                    }
                }
                #expect(!linked.isEmpty && Set(linked).isSubset(of: Set(operations)), "links to removed operations")
                // A route of a feature that is off: 404 `not_configured`, saying what turns it on.
                let offer = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "a", "offerId": "winback"}"#)
                #expect(offer.status == .notFound && offer.json["error"] as? String == "not_configured")
                #expect((offer.json["message"] as? String)?.contains("STOREKEEPER_ASSA") == true)
                for (method, uri) in [
                    (HTTPRequest.Method.post, "/stripe/webhooks"), (.post, "/notifications/google"), (.post, "/apple/retention-message"),
                ] {
                    let answer = try await client.execute(uri: uri, method: method, body: ByteBuffer(string: "{}"))
                    #expect(answer.status == .notFound, "\(uri)")
                    #expect(answer.json["error"] as? String == "not_configured", "\(uri)")
                }
            }
        }
    }

    @Test("the document's error codes are exactly APIError.Code's: none answered undocumented, none documented unanswerable")
    func errorCodes() throws {
        let schemas = try #require((try Self.document()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let error = try #require(((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any])
        let documented = Set(try #require(error["enum"] as? [String]))
        let answered = Set(APIError.Code.allCases.map(\.description))
        #expect(answered.subtracting(documented).isEmpty, "answered, not in the document: \(answered.subtracting(documented).sorted())")
        #expect(documented.subtracting(answered).isEmpty, "in the document, never answered: \(documented.subtracting(answered).sorted())")
        #expect(answered.count == APIError.Code.allCases.count)
    }

    @Test("every route of the router is an operation of the document, and every operation a route")
    func routes() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.everyFeature) { harness in
            var components = harness.components
            components.devClock = DevClock()
            let code = Set(components.router().routes.map { ReadmeTablesTests.normalized($0.method.rawValue, $0.path.description) })
            let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
            let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
            let documented = Set(
                paths.flatMap { path, item in
                    item.keys.filter(methods.contains).map { ReadmeTablesTests.normalized($0.uppercased(), path) }
                })
            #expect(code.subtracting(documented).sorted() == [], "routes missing from docs/openapi.json")
            #expect(documented.subtracting(code).sorted() == [], "operations in docs/openapi.json the router does not have")
        }
    }

    /// One real answer: the operation it answers (path as the document writes it) and what came back.
    struct Answer: Encodable {
        var path: String
        var method: String
        var status: Int
        var contentType: String
        var body: String
    }

    @Test("real answers of the service, admin and intake routes match the document's statuses, content types and schemas")
    func answers() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_JSONSCHEMA_PYTHON"] else {
            print("skipped: the jsonschema library is not installed (scripts/test installs it from PyPI)")
            return
        }
        let collected = Mutex<[Answer]>([])
        try await StorekeeperHarness.run(environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let service: HTTPFields = [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"]
                let admin: HTTPFields = [.authorization: "Bearer \(Self.adminKey)", .contentType: "application/json"]
                func record(_ path: String, _ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: String? = nil) async throws
                {
                    let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
                    let answer = Answer(
                        path: path, method: method.rawValue.lowercased(), status: Int(response.status.code),
                        contentType: response.headers[.contentType] ?? "", body: String(buffer: response.body))
                    collected.withLock { $0.append(answer) }
                }
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let stranger = UUID()
                try await record("/healthz", .get, "/healthz")
                try await record("/readyz", .get, "/readyz")
                try await record("/v1/tiers", .get, "/v1/tiers")
                try await record("/v1/accounts/{accountId}/status", .get, "/v1/accounts/\(account)/status", headers: service)
                try await record("/v1/accounts/{accountId}/status", .get, "/v1/accounts/\(stranger)/status", headers: service)
                try await record("/v1/accounts/{accountId}/status", .get, "/v1/accounts/\(account)/status")
                try await record(
                    "/v1/subscriptions/{originalTransactionId}", .get, "/v1/subscriptions/\(flow.originalTransactionId)", headers: service)
                try await record("/v1/subscriptions/{originalTransactionId}", .get, "/v1/subscriptions/1", headers: service)
                let spend = #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k1"}"#
                try await record("/v1/accounts/{accountId}/usage", .post, "/v1/accounts/\(account)/usage", headers: service, body: spend)
                try await record(
                    "/v1/accounts/{accountId}/usage", .post, "/v1/accounts/\(account)/usage", headers: service,
                    body: #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "k1"}"#)
                try await record(
                    "/v1/accounts/{accountId}/usage", .post, "/v1/accounts/\(stranger)/usage", headers: service,
                    body: #"{"meter": "ai_requests", "amount": 1000, "idempotencyKey": "k2"}"#)
                try await record(
                    "/v1/accounts/{accountId}/usage", .post, "/v1/accounts/\(account)/usage", headers: service, body: #"{"meter": "nope"}"#)
                try await record("/v1/accounts/{accountId}/purchase-intents", .post, "/v1/accounts/\(account)/purchase-intents", headers: service)
                try await record("/v1/events", .get, "/v1/events?limit=5", headers: service)
                try await record("/notifications/apple", .post, "/notifications/apple", headers: [.contentType: "application/json"], body: "{}")
                try await record(
                    "/notifications/apple", .post, "/notifications/apple", headers: [.contentType: "application/json"],
                    body: #"{"signedPayload": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"}"#)
                try await record("/stripe/webhooks", .post, "/stripe/webhooks", headers: [.contentType: "application/json"], body: "{}")
                try await record("/admin/stats", .get, "/admin/stats", headers: admin)
                try await record("/admin/jobs", .get, "/admin/jobs?state=completed", headers: admin)
                try await record("/admin/jobs/{id}", .get, "/admin/jobs/999999", headers: admin)
                try await record("/admin/events", .get, "/admin/events", headers: admin)
                try await record(
                    "/admin/accounts/{accountId}/grants", .post, "/admin/accounts/\(stranger)/grants", headers: admin,
                    body: #"{"tier": "pro", "duration": "P30D", "reason": "openapi test"}"#)
                try await record("/admin/accounts/{accountId}/grants", .get, "/admin/accounts/\(stranger)/grants", headers: admin)
                try await record("/admin/stats", .get, "/admin/stats")
                let listed = try await client.execute(uri: "/admin/events", method: .get, headers: admin)
                let event = try #require((listed.json["events"] as? [[String: Any]])?.first?["id"] as? String)
                try await record("/admin/events/{id}", .get, "/admin/events/\(event)", headers: admin)
                try await record("/admin/events/{id}/redeliver", .post, "/admin/events/\(event)/redeliver?endpoint=app", headers: admin)
                // A name the event has no delivery to: 404, not an empty 202.
                try await record("/admin/events/{id}/redeliver", .post, "/admin/events/\(event)/redeliver?endpoint=nope", headers: admin)
                #expect(collected.withLock { $0.suffix(2).map(\.status) } == [202, 404])
                try await record("/admin/audit", .get, "/admin/audit", headers: admin)
                try await record("/admin/audit", .get, "/admin/audit?format=csv&operator=nobody", headers: admin)
                try await record("/admin/audit", .get, "/admin/audit?limit=0", headers: admin)
                let today = Date().formatted(.iso8601.year().month().day())
                for metric in ["actives", "mrr", "revenue", "churn", "trial-conversion", "usage"] {
                    try await record("/admin/analytics/{metric}", .get, "/admin/analytics/\(metric)?to=\(today)&environment=sandbox", headers: admin)
                }
                try await record("/admin/analytics/{metric}", .get, "/admin/analytics/mrr?interval=month&format=csv", headers: admin)
                try await record("/admin/analytics/{metric}", .get, "/admin/analytics/mrr?interval=fortnight", headers: admin)
                try await record("/admin/analytics/{metric}", .get, "/admin/analytics/ltv", headers: admin)
                #expect(collected.withLock { $0.suffix(9).map(\.status) } == [200, 200, 200, 200, 200, 200, 200, 400, 404])
                try await record("/admin/search", .get, "/admin/search?q=\(account.uuidString.lowercased())", headers: admin)
                try await record("/admin/search", .get, "/admin/search?q=\(flow.originalTransactionId)", headers: admin)
                try await record("/admin/search", .get, "/admin/search?q=nobody", headers: admin)
                try await record("/admin/search", .get, "/admin/search?q=", headers: admin)
                #expect(collected.withLock { $0.suffix(4).map(\.status) } == [200, 200, 200, 400])
                // Without an App Store Server API key: what support would ask Apple is refused as documented.
                let id = account.uuidString.lowercased()
                try await record(
                    "/admin/accounts/{accountId}/extensions", .post, "/admin/accounts/\(id)/extensions", headers: admin,
                    body: #"{"days": 3, "reason": "other"}"#)
                try await record(
                    "/admin/accounts/{accountId}/extensions", .post, "/admin/accounts/\(id)/extensions", headers: admin,
                    body: #"{"days": 300, "reason": "other"}"#)
                try await record("/admin/accounts/{accountId}/extensions", .get, "/admin/accounts/\(id)/extensions", headers: admin)
                try await record(
                    "/admin/extensions", .post, "/admin/extensions", headers: admin,
                    body: #"{"productId": "pro.monthly", "days": 3, "reason": "other", "dryRun": true}"#)
                try await record("/admin/extensions", .get, "/admin/extensions", headers: admin)
                try await record("/admin/extensions/{requestIdentifier}", .get, "/admin/extensions/nope", headers: admin)
                try await record("/admin/accounts/{accountId}/apple-refunds", .get, "/admin/accounts/\(id)/apple-refunds", headers: admin)
                #expect(collected.withLock { $0.suffix(7).map(\.status) } == [409, 400, 200, 200, 200, 404, 409], "a dry run needs no Apple")
            }
        }
        let answers = collected.withLock { $0 }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sk-openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let answersFile = folder.appendingPathComponent("answers.json")
        try JSONEncoder().encode(answers).write(to: answersFile)
        let (status, lines) = try await PythonScript.run(python, Self.validator, arguments: [Self.file.path, answersFile.path])
        #expect(status == 0, "\(lines)")
        #expect(lines.contains { $0.contains("checked \(answers.count) answers") }, "\(lines)")
    }

    /// Finds each answer's response in the document (exact status, then `4XX`-style ranges, then `default`), its
    /// media type, and validates the body against the schema with JSON Schema 2020-12 (OpenAPI 3.1's dialect), the
    /// document's own `$ref`s resolved within it.
    static let validator = """
        import json, sys
        from urllib.parse import quote
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
        document = json.load(open(sys.argv[1]))
        answers = json.load(open(sys.argv[2]))
        registry = Registry().with_resource("urn:openapi", Resource.from_contents(document, default_specification=DRAFT202012))
        def pointer(*parts):
            return "#" + "".join("/" + quote(str(p).replace("~", "~0").replace("/", "~1"), safe="") for p in parts)
        failures = []
        for answer in answers:
            where = f"{answer['method'].upper()} {answer['path']} {answer['status']}"
            responses = document["paths"][answer["path"]][answer["method"]]["responses"]
            status = str(answer["status"])
            key = next((k for k in (status, status[0] + "XX", "default") if k in responses), None)
            if key is None:
                failures.append(f"{where}: status not documented ({sorted(responses)})")
                continue
            response = responses[key]
            if "$ref" in response:
                name = response["$ref"].split("/")[-1]
                response, parts = document["components"]["responses"][name], ("components", "responses", name)
            else:
                parts = ("paths", answer["path"], answer["method"], "responses", key)
            content = response.get("content", {})
            media = answer["contentType"].split(";")[0].strip()
            if not content:
                continue
            if media not in content:
                failures.append(f"{where}: content type {media!r} not documented ({sorted(content)})")
                continue
            if "schema" not in content[media] or not media.endswith("json"):
                continue
            schema = {"$ref": "urn:openapi" + pointer(*parts, "content", media, "schema")}
            errors = list(Draft202012Validator(schema, registry=registry).iter_errors(json.loads(answer["body"])))
            failures += [f"{where}: {e.message} at {list(e.absolute_path)}" for e in errors[:3]]
        print("\\n".join(failures))
        print(f"checked {len(answers)} answers, {len(failures)} failures")
        sys.exit(1 if failures else 0)
        """
}
