import Foundation
import HTTPTypes
import HostileInput
import Hummingbird
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@testable import HTTPAPI
@testable import IntegrationSupport

/// What a request's head may say, as a stranger sent it (the review of stop 114): an `Idempotency-Key` of bytes that
/// are not UTF-8, the `Authorization` scheme in another case, and HTTP/1.0's connection that ends with its answer.
@Suite("Request headers, from a stranger's review")
struct RequestHeaderTests {
    @Test("two spends whose Idempotency-Key headers are different bytes that are not UTF-8 are both refused 400, and nothing is charged")
    func idempotencyKeyNotUTF8() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_PORT": "0"]) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let body = #"{"meter": "ai_requests", "amount": 1}"#
                for key: [UInt8] in [[0xFF], [0xFE], Array("gen-".utf8) + [0xE9]] {
                    let head = Array(
                        ("POST /v1/accounts/header-bytes/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(StorekeeperHarness.apiKey)\r\n"
                            + "Content-Type: application/json\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\nIdempotency-Key: ").utf8)
                    let connection = try #require(RawConnection(port: port))
                    connection.send(head + key + Array("\r\n\r\n\(body)".utf8))
                    let answer = try await connection.textUntilClosed(timeout: .seconds(10), "the answer and the close")
                    #expect(answer.hasPrefix("HTTP/1.1 400") && answer.contains("invalid_idempotency_key"), "\(answer)")
                }
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = 'header-bytes'") == 0)
                // A key of UTF-8 beyond ASCII in the header is a key like any other.
                let spent = try await client.execute(
                    uri: "/v1/accounts/header-bytes/usage", method: .post,
                    headers: [
                        .authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json",
                        HTTPField.Name("Idempotency-Key")!: "gen-é",
                    ], body: ByteBuffer(string: body))
                #expect(spent.status == .ok, "\(String(buffer: spent.body))")
            }
        }
    }

    /// The answers `bytes` holds whole, each head and its `Content-Length` of body, and how many bytes follow the last.
    static func wholeAnswers(in bytes: [UInt8]) -> (heads: [String], leftOver: Int) {
        var heads: [String] = []
        var start = 0
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while let end = (start..<max(start, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) {
            let head = String(decoding: bytes[start..<end], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            guard end + 4 + length <= bytes.count else { break }
            heads.append(head)
            start = end + 4 + length
        }
        return (heads, bytes.count - start)
    }

    @Test(
        "a large answer to an HTTP/1.0 request, read slowly through a small receive buffer, arrives whole before the close (the close waits for the write)"
    )
    func largeAnswerBeforeTheClose() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_PORT": "0"]) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let connection = try #require(RawConnection(port: port, receiveBuffer: 8_192))
                connection.send(Array("GET /openapi.json HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                let received = try await connection.bytesUntilClosed(timeout: .seconds(30), "the document and the close")
                let (heads, leftOver) = Self.wholeAnswers(in: received)
                #expect(heads.count == 1 && leftOver == 0, "\(received.count) bytes: \(heads) and \(leftOver) more")
                #expect(received.count > 50_000)
                #expect(heads.first?.lowercased().contains("connection: close") == true)
            }
        }
    }

    @Test(
        "a client that sends a large GET and a spend, then shuts its sending side, reads both answers whole through a small buffer, and the spend is charged once"
    )
    func answersAfterTheClientsHalfClose() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_ADMIN_KEYS": "admin-key-half-close-01"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let topUp = try await client.execute(
                    uri: "/admin/accounts/half-closed/credits", method: .post,
                    headers: [.authorization: "Bearer admin-key-half-close-01", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 10, "reason": "test", "idempotencyKey": "top"}"#))
                #expect(topUp.status == .created, "\(String(buffer: topUp.body))")
                let body = #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "after-the-document"}"#
                let requests =
                    "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "POST /v1/accounts/half-closed/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(StorekeeperHarness.apiKey)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                let connection = try #require(RawConnection(port: port, receiveBuffer: 8_192))
                connection.send(Array(requests.utf8))
                connection.shutdownSending()
                // 2 KiB every 20 ms: NIO still holds some of the document when the client's end of input is read.
                let received = try await connection.bytesUntilClosed(timeout: .seconds(30), limit: 2_048, "both answers and the close")
                let (heads, leftOver) = Self.wholeAnswers(in: received)
                #expect(heads.count == 2 && leftOver == 0, "\(heads.count) whole answers of \(received.count) bytes, \(leftOver) more")
                #expect(heads.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(heads)")
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = 'half-closed'") == 1)
            }
        }
    }

    @Test("a body the budget cannot hold under a route group (its own security headers inside the budget) is 503 busy and closes, not 500")
    func budgetExhaustedInsideAGroup() async throws {
        let router = Router()
        router.group("v1").add(middleware: SecurityHeadersMiddleware<BasicRequestContext>()).get("full") { _, _ -> String in
            throw RequestBodyBudget.Exhausted()
        }
        try await Application(router: router).test(.router) { client in
            let answer = try await client.execute(uri: "/v1/full", method: .get)
            #expect(answer.status == .serviceUnavailable, "\(String(buffer: answer.body))")
            #expect(String(buffer: answer.body).contains("busy"))
            #expect(answer.headers[.connection] == "close")
            #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
        }
    }

    @Test("a dashboard form whose body, or any of whose fields' escapes, is not UTF-8 has no fields (so every form refuses it)")
    func dashboardForms() {
        func form(_ bytes: [UInt8]) -> [String: String] { AdminDashboardController.form(ByteBuffer(bytes: bytes)) }
        #expect(form(Array("request=k%C3%A9y+1&amount=5&amount=6".utf8)) == ["request": "kéy 1", "amount": "5"])
        #expect(form(Array("request=".utf8) + [0xFF] + Array("&amount=5".utf8)) == [:])
        #expect(form(Array("meter=m&amount=7&request=%FFretry1".utf8)) == [:], "a form keeps no field when one is malformed")
        #expect(form(Array("request=%ZZ&amount=5".utf8)) == [:])
        #expect(form(Array("request=%FF&request=dup&amount=5".utf8)) == [:])
    }

    @Test(
        "an HTTP/1.0 request is answered with Connection: close and its connection closed at once, not at the idle deadline; with keep-alive, or in HTTP/1.1, it serves a second request"
    )
    func http10ClosesAfterItsAnswer() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "600"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                for (version, connectionHeader) in [("HTTP/1.0", ""), ("HTTP/1.1", "Connection: close\r\n")] {
                    let connection = try #require(RawConnection(port: port))
                    connection.send(Array("GET /healthz \(version)\r\nHost: 127.0.0.1\r\n\(connectionHeader)\r\n".utf8))
                    let answer = try await connection.textUntilClosed(
                        timeout: .seconds(10), "\(version) \(connectionHeader): the answer and the close")
                    #expect(answer.hasPrefix("HTTP/1.1 200") && answer.lowercased().contains("connection: close"), "\(answer)")
                }
                for (version, connectionHeader) in [("HTTP/1.0", "Connection: keep-alive\r\n"), ("HTTP/1.1", "")] {
                    let connection = try #require(RawConnection(port: port))
                    let request = Array("GET /healthz \(version)\r\nHost: 127.0.0.1\r\n\(connectionHeader)\r\n".utf8)
                    connection.send(request)
                    var answers = ""
                    try await eventually(timeout: .seconds(10), "\(version) \(connectionHeader): the first answer") {
                        answers += String(decoding: connection.receive().bytes, as: UTF8.self)
                        return answers.contains("\r\n\r\n")
                    }
                    connection.send(request)
                    try await eventually(timeout: .seconds(10), "\(version) \(connectionHeader): the second answer, on the same connection") {
                        let (bytes, closed) = connection.receive()
                        answers += String(decoding: bytes, as: UTF8.self)
                        return closed || answers.components(separatedBy: "HTTP/1.1 200").count - 1 == 2
                    }
                    #expect(answers.components(separatedBy: "HTTP/1.1 200").count - 1 == 2, "\(answers)")
                    #expect(!answers.lowercased().contains("connection: close"))
                }
            }
        }
    }

    @Test("a CONNECT is answered with Connection: close and its connection closed, so the answer NIO writes without a length ends")
    func connectClosesAfterItsAnswer() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "600"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                // A tunnel's target (404), and a routed path (405).
                for target in ["evil.example:443", "/v1/tiers"] {
                    let connection = try #require(RawConnection(port: port))
                    connection.send(Array("CONNECT \(target) HTTP/1.1\r\nHost: evil.example:443\r\n\r\n".utf8))
                    let answer = try await connection.textUntilClosed(timeout: .seconds(10), "the answer to CONNECT \(target) and the close")
                    #expect(answer.hasPrefix("HTTP/1.1 40") && answer.lowercased().contains("connection: close"), "\(answer)")
                }
            }
        }
    }

    @Test(
        "the Authorization scheme is matched in any case (RFC 9110 §11.1): bearer and BEARER present the key; another scheme, none or no space do not"
    )
    func schemeInAnyCase() async throws {
        #expect(KeyRing.credentials(of: "Bearer k-1", scheme: "bearer") == "k-1")
        #expect(KeyRing.credentials(of: "bearer k-1", scheme: "bearer") == "k-1")
        #expect(KeyRing.credentials(of: "BeArEr k 1", scheme: "bearer") == "k 1")
        #expect(KeyRing.credentials(of: "Bearerk-1", scheme: "bearer") == nil)
        #expect(KeyRing.credentials(of: "Bearer", scheme: "bearer") == nil)
        #expect(KeyRing.credentials(of: "Basic k-1", scheme: "bearer") == nil)
        #expect(KeyRing.credentials(of: "Bearar k-1", scheme: "bearer") == nil)
        #expect(KeyRing.credentials(of: "Béarer k-1", scheme: "bearer") == nil)
        #expect(KeyRing.credentials(of: "basic dTpw", scheme: "basic") == "dTpw")
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                for scheme in ["bearer", "BEARER", "Bearer"] {
                    let answer = try await client.execute(
                        uri: "/v1/accounts/any-case/status", method: .get, headers: [.authorization: "\(scheme) \(StorekeeperHarness.apiKey)"])
                    #expect(answer.status == .ok, "\(scheme)")
                }
                let refused = try await client.execute(
                    uri: "/v1/accounts/any-case/status", method: .get, headers: [.authorization: "Bearer\(StorekeeperHarness.apiKey)"])
                #expect(refused.status == .unauthorized)
            }
        }
    }
}
