import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// Every error answer is the SPEC's `{"error", "message"}` with the one JSON content type of the successes — unknown
/// routes and wrong methods included — and the dashboard's Basic challenge says Basic.
@Suite("Error answers")
struct ErrorAnswersTests {
    static let json = "application/json; charset=utf-8"

    @Test("an unknown route is 404 JSON; a known path with another method is 405 JSON with Allow naming what is routed")
    func unknownRoutes() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { harness in
            try await harness.withHTTP { client in
                let missing = try await client.execute(uri: "/no/such/route", method: .get)
                #expect(missing.status == .notFound && missing.headers[.contentType] == Self.json)
                let missingAnswer = try missing.answer(ErrorAnswer.self)
                #expect(missingAnswer.error == "not_found" && missingAnswer.message.contains("/no/such/route"))
                let wrongMethod = try await client.execute(uri: "/healthz", method: .post)
                #expect(wrongMethod.status == .methodNotAllowed && wrongMethod.headers[.contentType] == Self.json)
                #expect(try wrongMethod.answer(ErrorAnswer.self).error == "method_not_allowed")
                // HEAD is answered wherever GET is, so Allow names it.
                #expect(wrongMethod.headers[.allow] == "GET, HEAD")
                let head = try await client.execute(uri: "/healthz", method: .head)
                #expect(head.status == .ok && head.body.readableBytes == 0)
                let parameterised = try await client.execute(
                    uri: "/v1/accounts/a/status", method: .delete, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                #expect(parameterised.status == .methodNotAllowed && parameterised.headers[.allow] == "GET, HEAD")
                // The literal route wins over /admin/jobs/{id}, as in the router: GET there is 405 with POST alone.
                let literal = try await client.execute(uri: "/admin/jobs/requeue", method: .get, headers: [.authorization: "Bearer admin-key"])
                #expect(literal.status == .methodNotAllowed && literal.headers[.allow] == "POST", "\(literal.headers)")
                #expect(missing.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            }
        }
    }

    @Test("errors and successes share one content type")
    func oneContentType() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let success = try await client.getWithKey("/v1/accounts/a/status")
                let failure = try await client.getWithKey("/v1/subscriptions/" + String(repeating: "9", count: 300))
                let unauthorized = try await client.execute(uri: "/v1/accounts/a/status", method: .get)
                let usage = try await client.withKey(.post, "/v1/accounts/a/usage", #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#)
                #expect(success.status == .ok && failure.status == .badRequest && unauthorized.status == .unauthorized && usage.status == .ok)
                for answer in [success, failure, unauthorized, usage] { #expect(answer.headers[.contentType] == Self.json) }
            }
        }
    }

    @Test("the dashboard's Basic challenge says how to sign in with Basic")
    func basicChallenge() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { harness in
            try await harness.withHTTP { client in
                let page = try await client.execute(uri: "/admin", method: .get)
                #expect(page.status == .unauthorized && page.headers[.wwwAuthenticate]?.hasPrefix("Basic ") == true)
                #expect(try page.answer(ErrorAnswer.self).message.contains("HTTP Basic"))
                let api = try await client.execute(uri: "/admin/stats", method: .get)
                #expect(try api.status == .unauthorized && api.answer(ErrorAnswer.self).message.contains("bearer"))
            }
        }
    }

    @Test("dev.env is what `source` reads: every value single-quoted, and read back the same")
    func devSettings() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-devenv-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let dev = DevEnvironment(directory: directory)
        let settings = ["DATABASE_URL": "postgres://storekeeper@/postgres?host=/tmp/x&sslmode=disable", "ODD": "it's"]
        try dev.writeSettings(settings)
        #expect(dev.settings() == settings)
        let script = "source '\(dev.settingsFile.path)' && printf '%s|%s' \"$DATABASE_URL\" \"$ODD\""
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/bash")
        shell.arguments = ["-c", script]
        let pipe = Pipe()
        shell.standardOutput = pipe
        try shell.run()
        shell.waitUntilExit()
        let printed = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(printed == "\(settings["DATABASE_URL"]!)|it's")
    }
}
