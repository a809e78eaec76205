import Foundation
import HostileInput
import Hummingbird
import HummingbirdTesting
import StorekeeperRuntime
import TestSupport
import Testing

@testable import HTTPAPI
@testable import IntegrationSupport

/// The HTTP server's limits against clients that never finish: connections are closed at their deadlines, and
/// large bodies held open cannot take more memory than the budget.
@Suite("Connection limits")
struct ConnectionLimitsTests {
    static let halfHead = Array("POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le".utf8)

    static func unfinishedBody(kilobytes: Int) -> [UInt8] {
        Array("POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 524288\r\n\r\n".utf8)
            + [UInt8](repeating: UInt8(ascii: " "), count: kilobytes * 1024)
    }

    @Test("half a head, a stalled body, an idle keep-alive and a silent connection are each closed at their deadline")
    func deadlines() async throws {
        let environment = [
            "STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_HEAD_TIMEOUT": "1", "STOREKEEPER_HTTP_BODY_TIMEOUT": "1",
            "STOREKEEPER_HTTP_IDLE_TIMEOUT": "1",
        ]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let half = try #require(RawConnection(port: port))
                half.send(Self.halfHead)
                let body = try #require(RawConnection(port: port))
                body.send(Self.unfinishedBody(kilobytes: 1))
                let idle = try #require(RawConnection(port: port))
                idle.send(Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                let silent = try #require(RawConnection(port: port))
                try await eventually(timeout: .seconds(10), "every stalled connection to be closed") {
                    [half, body, idle, silent].allSatisfy(\.isClosedByPeer)
                }
                // The server still serves whoever sends a whole request (the test client's own connection, idle since
                // the start, was closed too).
                let prompt = try #require(RawConnection(port: port))
                prompt.send(Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                var answer: [UInt8] = []
                try await eventually("/healthz to answer") {
                    answer += prompt.readAvailable() ?? []
                    return String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200")
                }
            }
        }
    }

    /// Answers a client asks for in one go: `/openapi.json` fifteen times, far more than the kernel holds for a
    /// connection (what is on its way to a client with a 32 KiB window, and 64 KiB unsent), so `serve`'s writer has to
    /// wait for the client, and the answers behind those never reach their end, which would arm the idle deadline.
    static let largeAnswers = [UInt8](
        String(repeating: "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 15).utf8)

    @Test("a client that stops reading its answers is closed at the write deadline; one that reads gets them all")
    func clientThatStopsReading() async throws {
        // The idle deadline is far away: only the write deadline can close these connections within the test.
        // A write deadline long enough that the reading client, polled by a test among others on a busy machine, reads
        // far more than the 64 KiB floor in each (at 2 s, CI's load once let it fall below and it was closed).
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_WRITE_TIMEOUT": "5", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "600"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let answerSize = try await client.execute(uri: "/openapi.json", method: .get).body.readableBytes
                // Reads up to 64 KiB every 20 ms, for longer than the write deadline in all: never closed. (The
                // floor itself is ConnectionDeadlineHandlerTests'.)
                let reading = try #require(RawConnection(port: port, receiveBuffer: 16_384))
                #expect(reading.send(Self.largeAnswers) == Self.largeAnswers.count)
                var received = 0
                try await eventually(timeout: .seconds(90), "the reading client to get every answer") {
                    received += try #require(reading.readAvailable(limit: 65_536), "closed a client that was reading").count
                    return received >= 15 * answerSize
                }
                #expect(reading.serverEndIsOpen(serverPort: port) == true)
                // Reads nothing: the server closes its end once the client has read nothing for the write deadline.
                let stopped = try #require(RawConnection(port: port, receiveBuffer: 16_384))
                #expect(stopped.send(Self.largeAnswers) == Self.largeAnswers.count)
                try await eventually(timeout: .seconds(20), "the server's end of the connection to be established") {
                    stopped.serverEndIsOpen(serverPort: port) == true
                }
                try await eventually(timeout: .seconds(20), "the server to close the connection of a client that stopped reading") {
                    stopped.serverEndIsOpen(serverPort: port) == false
                }
                // What was on its way still arrives, then the end: far less than it asked for.
                var delivered = 0
                try await eventually(timeout: .seconds(20), "the closed connection's end") {
                    guard let bytes = stopped.readAvailable() else { return true }
                    delivered += bytes.count
                    return false
                }
                #expect(delivered < 15 * answerSize)
            }
        }
    }

    @Test("large bodies held open beyond the body memory are refused with 503 and their connections closed")
    func bodyMemory() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_BODY_MEMORY_MB": "1", "STOREKEEPER_HTTP_BODY_TIMEOUT": "60"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let connections = (0..<6).compactMap { _ in RawConnection(port: port) }
                let body = Self.unfinishedBody(kilobytes: 500)
                var sent = [Int](repeating: 0, count: connections.count)
                // 1 MiB holds two of them; the others are answered 503 and closed long
                // before the 60-s body deadline. The socket takes a body in parts, as the server reads it.
                try await eventually(timeout: .seconds(20), "the bodies beyond the budget to be refused") {
                    var closed = 0
                    for (index, connection) in connections.enumerated() {
                        if connection.isClosedByPeer {
                            closed += 1
                        } else if sent[index] < body.count {
                            sent[index] += connection.send(Array(body[sent[index]...]))
                        }
                    }
                    return closed >= 3
                }
            }
        }
    }

    @Test("the budget: every byte is reserved as it arrives and released when the request is answered")
    func budgetArithmetic() throws {
        let budget = RequestBodyBudget(bytes: 1 << 20)
        let first = BodyReservation(budget: budget, sender: .authenticated)
        try first.receive(600 * 1024)
        #expect(budget.reservedBytes == 600 * 1024)
        let second = BodyReservation(budget: budget, sender: .authenticated)
        #expect(throws: RequestBodyBudget.Exhausted.self) { try second.receive(600 * 1024) }
        let small = BodyReservation(budget: budget, sender: .authenticated)
        try small.receive(1024)
        #expect(budget.reservedBytes == 601 * 1024)
        first.releaseAll()
        second.releaseAll()
        small.releaseAll()
        #expect(budget.reservedBytes == 0)
        let third = BodyReservation(budget: budget, sender: .authenticated)
        try third.receive(100 * 1024)
        #expect(budget.reservedBytes == 100 * 1024)
    }

    @Test("bodies nobody vouched for hold at most three quarters of the budget; the rest is kept for authenticated ones")
    func strangersShare() throws {
        let budget = RequestBodyBudget(bytes: 1 << 20)
        #expect(budget.strangersShare == 768 * 1024)
        let stranger = BodyReservation(budget: budget, sender: .stranger)
        try stranger.receive(700 * 1024)
        let another = BodyReservation(budget: budget, sender: .stranger)
        #expect(throws: RequestBodyBudget.Exhausted.self) { try another.receive(100 * 1024) }
        try another.receive(68 * 1024)
        let authenticated = BodyReservation(budget: budget, sender: .authenticated)
        try authenticated.receive(256 * 1024)
        #expect(budget.reservedBytes == 1 << 20)
        #expect(throws: RequestBodyBudget.Exhausted.self) { try authenticated.receive(1) }
        for reservation in [stranger, another, authenticated] { reservation.releaseAll() }
        #expect(budget.reservedBytes == 0)

        func sender(_ path: String) -> RequestBodyBudget.Sender {
            RequestBodyBudgetMiddleware<StorekeeperRequestContext>.sender(
                of: Request(head: .init(method: .post, scheme: "http", authority: "127.0.0.1", path: path), body: .init(buffer: .init())))
        }
        #expect(sender("/v1/accounts/a/usage") == .authenticated)
        #expect(sender("/admin/accounts/a/credits") == .authenticated)
        for path in ["/notifications/apple", "/stripe/webhooks", "/notifications/google", "/apple/retention-message", "/v1", "/v1x/a", "/"] {
            #expect(sender(path) == .stranger, "\(path)")
        }
    }

    @Test("stalled bodies on an intake fill only the strangers' share: a spend's large body behind the service key is read")
    func intakeCannotStarveTheServiceAPI() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_BODY_MEMORY_MB": "1", "STOREKEEPER_HTTP_BODY_TIMEOUT": "60"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                // One 500-KiB body fits the strangers' 768 KiB, a second does not: without the share both fit, and
                // the 300 KiB below would not. One at a time, each after the one before has been held whole or refused:
                // bodies that arrive together may each hold part of the share and be refused together, all of them.
                let body = Self.unfinishedBody(kilobytes: 500)
                let first = try #require(RawConnection(port: port))
                var firstSent = 0
                try await eventually(timeout: .seconds(20), "the first stalled body to be held whole") {
                    if firstSent < body.count { firstSent += first.send(Array(body[firstSent...])) }
                    return harness.components.bodyBudget.reservedBytes == 500 * 1024
                }
                for attempt in 1...3 {
                    let another = try #require(RawConnection(port: port))
                    var sent = 0
                    try await eventually(timeout: .seconds(20), "stalled body \(attempt) after the first to be refused") {
                        if sent < body.count && !another.isClosedByPeer { sent += another.send(Array(body[sent...])) }
                        return another.isClosedByPeer
                    }
                    try await eventually("the refused body's bytes to be released") {
                        harness.components.bodyBudget.reservedBytes == 500 * 1024
                    }
                }
                let spend = #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "large"}"# + String(repeating: " ", count: 300 * 1024)
                let answer = try await client.execute(
                    uri: "/v1/accounts/large-body/usage", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(string: spend))
                #expect(answer.status == .ok || answer.status.code == 402, "\(answer.status)")
                #expect(!first.isClosedByPeer, "the body within the share is still being read")
            }
        }
    }

    @Test("the configuration reads every STOREKEEPER_HTTP_* variable and refuses nonsense with one line each")
    func configuration() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "STOREKEEPER_BUNDLE_ID": "b", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        ]
        let configured = try StorekeeperConfiguration.load(
            environment: base.merging([
                "STOREKEEPER_HTTP_HEAD_TIMEOUT": "3", "STOREKEEPER_HTTP_BODY_TIMEOUT": "4", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "5",
                "STOREKEEPER_HTTP_WRITE_TIMEOUT": "6", "STOREKEEPER_HTTP_MAX_CONNECTIONS": "100", "STOREKEEPER_HTTP_BODY_MEMORY_MB": "2",
                "STOREKEEPER_METRICS_KEYS": "m1, m2",
            ]) { $1 })
        #expect(
            configured.httpLimits
                == HTTPServerLimits(
                    headTimeout: .seconds(3), bodyTimeout: .seconds(4), idleTimeout: .seconds(5), writeTimeout: .seconds(6),
                    maximumConnections: 100, bodyMemory: 2 << 20))
        #expect(configured.metricsKeys == ["m1", "m2"])
        #expect(try StorekeeperConfiguration.load(environment: base).httpLimits == HTTPServerLimits())
        // Those who keep connections to serve open commonly drop an idle one after 60 s (AsyncHTTPClient's pool, an
        // AWS load balancer, nginx's upstream keepalive_timeout): serve must not close it first, at the instant a
        // request may go out on it.
        #expect(HTTPServerLimits().idleTimeout > .seconds(60))
        do {
            _ = try StorekeeperConfiguration.load(
                environment: base.merging([
                    "STOREKEEPER_HTTP_HEAD_TIMEOUT": "0", "STOREKEEPER_HTTP_MAX_CONNECTIONS": "lots", "STOREKEEPER_HTTP_WRITE_TIMEOUT": "-1",
                ]) { $1 })
            Issue.record("nonsense limits were accepted")
        } catch {
            #expect(error.problems.count == 3)
        }
    }
}
