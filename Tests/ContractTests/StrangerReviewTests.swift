import Foundation
import HTTPTypes
import HostileInput
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import StorekeeperRuntime
import Subscriptions
import TestSupport
import Testing

@testable import HTTPAPI
@testable import IntegrationSupport

/// The second outside review's attacks (issue 38), each as the stranger sent it, against the real server, router and
/// PostgreSQL. Every expectation is what a careful server answers, not what Storekeeper happened to do; each of these
/// failed on c110331.
@Suite("A stranger's attacks, second review")
struct StrangerReviewTests {
    static func healthzWithLateEnd() -> [UInt8] {
        Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n".utf8)
    }

    @Test("a request whose last byte comes after its answer is still closed at the idle deadline; 16 of them do not lock a 16-connection server out")
    func lateRequestEnd() async throws {
        let environment = [
            "STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_MAX_CONNECTIONS": "16", "STOREKEEPER_HTTP_HEAD_TIMEOUT": "2",
            "STOREKEEPER_HTTP_BODY_TIMEOUT": "2", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "2",
        ]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                // The test client's own connection counts too: 15 attackers and it fill the server.
                let attackers = (0..<15).compactMap { _ in RawConnection(port: port) }
                for connection in attackers { connection.send(Self.healthzWithLateEnd()) }
                var answered = [String](repeating: "", count: attackers.count)
                try await eventually(timeout: .seconds(10), "every /healthz to be answered before its body byte") {
                    for (index, connection) in attackers.enumerated() {
                        answered[index] += String(decoding: connection.readAvailable() ?? [], as: UTF8.self)
                    }
                    return answered.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }
                }
                for connection in attackers { connection.send(Array("x".utf8)) }
                try await eventually(timeout: .seconds(15), "the server to close every connection at its idle deadline") {
                    attackers.allSatisfy(\.isClosedByPeer)
                }
                let fresh = try #require(RawConnection(port: port))
                fresh.send(Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                var answer = ""
                try await eventually(timeout: .seconds(10), "a new connection to be answered") {
                    answer += String(decoding: fresh.readAvailable() ?? [], as: UTF8.self)
                    return answer.hasPrefix("HTTP/1.1 200")
                }
            }
        }
    }

    @Test("every byte of every body counts: small stalled bodies past the budget are refused 503 and closed")
    func smallBodiesCount() async throws {
        let budget = RequestBodyBudget(bytes: 128 * 1024)
        let first = BodyReservation(budget: budget, sender: .stranger)
        try first.receive(62 * 1024)
        #expect(budget.reservedBytes == 62 * 1024)
        let second = BodyReservation(budget: budget, sender: .stranger)
        #expect(throws: RequestBodyBudget.Exhausted.self) { try second.receive(62 * 1024) }
        first.releaseAll()
        second.releaseAll()
        #expect(budget.reservedBytes == 0)

        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_BODY_MEMORY_MB": "1", "STOREKEEPER_HTTP_BODY_TIMEOUT": "60"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let head = "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n"
                let part = Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 62 * 1024)
                let connections = (0..<40).compactMap { _ in RawConnection(port: port) }
                var sent = [Int](repeating: 0, count: connections.count)
                // The strangers' share of 1 MiB (768 KiB) holds 12 parts of 62 KiB; the other 28 are refused long
                // before the 60-s body deadline.
                try await eventually(timeout: .seconds(20), "the parts beyond the budget to be refused") {
                    for (index, connection) in connections.enumerated() where sent[index] < part.count && !connection.isClosedByPeer {
                        sent[index] += connection.send(Array(part[sent[index]...]))
                    }
                    return connections.filter(\.isClosedByPeer).count >= 28
                }
                let valid = try await client.execute(
                    uri: "/v1/tiers", method: .get, headers: [:])
                #expect(valid.status == .ok)
            }
        }
    }

    @Test("a body declared past the route's limit is refused 413 from the head, none of it sent, long before the body deadline")
    func declaredTooLarge() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_HTTP_BODY_TIMEOUT": "60"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let connection = try #require(RawConnection(port: port))
                let head =
                    "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
                #expect(connection.send(Array(head.utf8)) == head.utf8.count)
                var answer: [UInt8] = []
                try await eventually(timeout: .seconds(10), "the 413 before any of the body") {
                    // A byte at a time: a read that reaches the close as well answers nil and drops what it read.
                    while let byte = connection.readAvailable(limit: 1), !byte.isEmpty { answer += byte }
                    return String(decoding: answer, as: UTF8.self).contains("payload_too_large")
                }
                #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 413"), "\(String(decoding: answer, as: UTF8.self))")
                try await eventually(timeout: .seconds(10), "the connection to be closed") { connection.isClosedByPeer }
            }
        }
    }

    @Test("HTML escaping is by Unicode scalar: a quote with a combining mark after it cannot end an attribute")
    func quoteWithCombiningMark() {
        let hostile = "x\"\u{301} onmouseover=alert(1) '\u{301}<\u{338}"
        let escaped = HTMLPage.escape(hostile)
        #expect(
            !escaped.unicodeScalars.contains { ["\"", "'", "<", ">"].contains($0) }, "\(escaped.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(escaped.hasPrefix("x&quot;\u{301} onmouseover"))
        #expect(HTMLPage.escape("plain & simple") == "plain &amp; simple")
    }

    @Test("control characters in an id are shown as the replacement character, not passed to the browser; tabs and line ends stay")
    func controlCharacters() {
        #expect(HTMLPage.escape("a\u{0}b\u{1B}[31mc\u{7F}d\u{85}e") == "a\u{FFFD}b\u{FFFD}[31mc\u{FFFD}d\u{FFFD}e")
        #expect(HTMLPage.escape("line\tone\r\ntwo") == "line\tone\r\ntwo")
    }

    @Test("a count in a dashboard table is a right-aligned cell (td.num), text elsewhere as it was")
    func numericCells() {
        let html = HTMLPage.table(["kind", "count"], [["apply", .number(12)]])
        #expect(html.contains("<td>apply</td><td class=\"num\">12</td>"))
    }

    @Test("spends of account c with key x:y and of account c:x with key y are both charged")
    func ledgerKeysDoNotCollide() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                func spend(_ account: String, _ key: String) async throws -> TestResponse {
                    try await client.withKey(
                        .post, "/v1/accounts/\(account)/usage", #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(key)"}"#)
                }
                func remaining(_ account: String) async throws -> Int? {
                    let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                    return status.credits["ai_requests"]?.remaining.map(Int.init)
                }
                // The free tier's 5 ai_requests a day.
                let first = try await spend("c", "x:y")
                let second = try await spend("c:x", "y")
                #expect(first.status == .ok && second.status == .ok)
                let left = (try await remaining("c"), try await remaining("c:x"))
                #expect(left.0 == 4)
                #expect(left.1 == 4, "the second spend was served uncharged")
                let usage = try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage'")
                #expect(usage == 2)
            }
        }
    }

    @Test("ids limited in UTF-8 bytes: one visible character of 3,000 bytes is 400 on every route, never 500 or 503")
    func accountIdBytes() async throws {
        let heavy = "e" + String(repeating: "\u{0301}", count: 1_500)
        #expect(heavy.count == 1 && heavy.utf8.count == 3_001)
        let path = try #require(heavy.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let answers = [
                    try await client.withKey(.put, "/v1/accounts/\(path)/consent", #"{"consented": true}"#),
                    try await client.withKey(.post, "/v1/accounts/\(path)/usage", #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#),
                    try await client.withKey(.post, "/v1/accounts/\(path)/purchase-intents", "{}"),
                    try await client.getWithKey("/v1/accounts/\(path)/status"),
                    try await client.getWithKey("/v1/accounts/\(path)/refund-requests"),
                ]
                for answer in answers { #expect(answer.status == .badRequest) }
            }
        }
    }

    @Test("every query parameter is checked: POST /admin/events/{id}/redeliver?endpoint=%00 is 400")
    func redeliverEndpointChecked() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { harness in
            try await harness.withHTTP { client in
                let answer = try await client.execute(
                    uri: "/admin/events/\(UUID())/redeliver?endpoint=%00", method: .post,
                    headers: [.authorization: "Bearer admin-key", .contentType: "application/json"])
                #expect(answer.status == .badRequest)
                let long = try await client.execute(
                    uri: "/admin/events/\(UUID())/redeliver?endpoint=" + String(repeating: "a", count: 3_000), method: .post,
                    headers: [.authorization: "Bearer admin-key", .contentType: "application/json"])
                #expect(long.status == .badRequest)
            }
        }
    }

    @Test("a client that disconnects mid-upload is logged at debug, never as an error")
    func abortedUploads() async throws {
        let records = LogRecords()
        var logger = Logger(label: "stranger") { _ in RecordingLogHandler(records: records) }
        logger.logLevel = .debug
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_PORT": "0"]) { harness in
            let application = Application(
                router: harness.components.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
            try await application.test(.live) { client in
                let port = try #require(client.port)
                let head = "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n"
                for _ in 0..<20 {
                    let connection = try #require(RawConnection(port: port))
                    connection.send(Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 8 * 1024))
                    try await Task.sleep(for: .milliseconds(20))
                }  // each connection is closed as it goes out of scope
                try await eventually(timeout: .seconds(10), "the aborted uploads to be noticed") {
                    records.messages(at: .debug).filter { $0 == "request body unreadable" }.count >= 20
                }
                #expect(records.messages(at: .error).isEmpty, "\(records.messages(at: .error))")
            }
        }
    }

    @Test("a webhook receiver answering 307 elsewhere: nothing is re-sent there, the attempt fails and names the Location")
    func webhookRedirectsNotFollowed() async throws {
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { target in
            let targetPort = try #require(target.port)
            let redirector = Router()
            redirector.post("/hook") { _, _ in
                Response(status: .temporaryRedirect, headers: [.location: "http://127.0.0.1:\(targetPort)/hook"])
            }
            try await Application(router: redirector).test(.live) { live in
                let configuration = receiver.configuration(port: try #require(live.port))
                try await StorekeeperHarness.run(environment: ["STOREKEEPER_WEBHOOKS": configuration]) { harness in
                    try await harness.withHTTP { client in
                        var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                        try await flow.send(.subscribe)
                        try await eventually(timeout: .seconds(20), "a delivery attempt") {
                            try await harness.count("SELECT count(*) FROM webhook_attempts") >= 1
                        }
                        let rows = try await harness.client.query(
                            "SELECT coalesce(status_code, 0), coalesce(error, '') FROM webhook_attempts ORDER BY id LIMIT 1",
                            logger: TestDatabase.logger)
                        var attempt: (Int, String)?
                        for try await row in rows.decode((Int, String).self) { attempt = row }
                        #expect(attempt?.0 == 307)
                        #expect(attempt?.1.contains("http://127.0.0.1:\(targetPort)/hook") == true, "\(String(describing: attempt))")
                        #expect(try await harness.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'") == 0)
                        #expect(receiver.deliveries.isEmpty && receiver.refusals == 0, "the signed event reached the redirect's target")
                    }
                }
            }
        }
    }

    @Test("20 parallel requests for a once-per-account offer sign one; a token of another account is refused")
    func oncePerAccountOffer() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_OFFERS": StorekeeperHarness.offers]) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    try await flow.send(.expire)
                    let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                        for _ in 0..<20 {
                            group.addTask {
                                try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "winback"}"#)
                                    .status
                            }
                        }
                        return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                    }
                    #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
                    #expect(statuses.filter { $0 == .forbidden }.count == 19)
                    let signatures = try await harness.count("SELECT count(*) FROM offer_signatures")
                    #expect(signatures == 1)

                    // A subscriber may have "stay" any number of times, but only for itself.
                    var active = LifecycleFlow(harness: harness, client: client, account: UUID())
                    try await active.send(.subscribe)
                    let subscriber = active.subscription.accountId!
                    let foreign = try await client.withKey(
                        .post, "/v1/offers/promotional", #"{"accountId": "\#(subscriber)", "offerId": "stay", "appAccountToken": "\#(UUID())"}"#)
                    #expect(try foreign.status == .forbidden && foreign.answer(ErrorAnswer.self).error == "foreign_app_account_token")
                    let intent = try await client.withKey(.post, "/v1/accounts/\(subscriber)/purchase-intents", "{}")
                        .answer(PurchaseIntentAnswer.self).appAccountToken
                    let own = try await client.withKey(
                        .post, "/v1/offers/promotional", #"{"accountId": "\#(subscriber)", "offerId": "stay", "appAccountToken": "\#(intent)"}"#)
                    #expect(try own.status == .ok && own.answer(PromotionalOfferAnswer.self).appAccountToken == intent)
                }
            }
        }
    }

    @Test("ids Swift calls equal but PostgreSQL does not (Å composed, decomposed) are two accounts: status and spends stay apart")
    func unicodeEquivalentAccounts() async throws {
        let composed = "\u{00C5}sa"
        let decomposed = "A\u{030A}sa"
        #expect(composed == decomposed && AccountID(composed) != AccountID(decomposed))
        #expect(Set([AccountID(composed)!, AccountID(decomposed)!]).count == 2)
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                func path(_ id: String) -> String { id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
                // Both in one group of spends where the timing allows it: the same key on both accounts.
                async let first = client.withKey(
                    .post, "/v1/accounts/\(path(composed))/usage", #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "z\u00e9"}"#)
                async let second = client.withKey(
                    .post, "/v1/accounts/\(path(decomposed))/usage", #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "ze\u0301"}"#)
                let answers = try await (first, second)
                #expect(answers.0.status == .ok && answers.1.status == .ok)
                let left = (
                    try await client.getWithKey("/v1/accounts/\(path(composed))/status").answer(StatusAnswer.self),
                    try await client.getWithKey("/v1/accounts/\(path(decomposed))/status").answer(StatusAnswer.self)
                )
                func remaining(_ status: StatusAnswer) -> Int? { status.credits["ai_requests"]?.remaining.map(Int.init) }
                #expect(remaining(left.0) == 3 && remaining(left.1) == 4, "\(remaining(left.0) ?? -1), \(remaining(left.1) ?? -1)")
                let usage = try await harness.count("SELECT count(*) FROM usage_requests")
                #expect(usage == 2)
            }
        }
    }

    @Test("a connection that pipelines more than 16 requests ahead of their answers gets the 16 answers, then is closed")
    func pipelining() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_PORT": "0"]) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
                let polite = try #require(RawConnection(port: port))
                polite.send(Array((0..<16).map { _ in request }.joined()))
                var answers = ""
                try await eventually(timeout: .seconds(10), "16 pipelined requests to be answered") {
                    answers += String(decoding: polite.readAvailable() ?? [], as: UTF8.self)
                    return answers.components(separatedBy: "HTTP/1.1 200").count - 1 == 16
                }
                // Past the limit: the 16 taken are answered, the last saying it closes, then the connection is closed.
                let greedy = try #require(RawConnection(port: port))
                greedy.send(Array((0..<3_000).map { _ in request }.joined()))
                let greedyAnswers = try await greedy.textUntilClosed(timeout: .seconds(10), "the greedy connection to be answered and closed")
                #expect(greedyAnswers.components(separatedBy: "HTTP/1.1 200").count - 1 == 16)
                #expect(greedyAnswers.components(separatedBy: "HTTP/1.1 ").count - 1 == 16, "only the 16")
                #expect(greedyAnswers.lowercased().components(separatedBy: "connection: close").count - 1 == 1)
            }
        }
    }

    @Test(
        "17 large answers pipelined in one write, then bytes that are not HTTP: the 16 taken arrive whole, read through a small buffer, and nothing after them"
    )
    func pipelinedLargeAnswers() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_PORT": "0"]) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let connection = try #require(RawConnection(port: port, receiveBuffer: 65_536))
                let request = "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                // Then bytes that are not HTTP: dropped with the 17th, not answered 400 after the answer that said close.
                connection.send(Array((String(repeating: request, count: 17) + "NOT HTTP\r\n\r\n").utf8))
                let received = try await connection.bytesUntilClosed(timeout: .seconds(60), "the 16 answers and the close")
                let (heads, leftOver) = RequestHeaderTests.wholeAnswers(in: received)
                #expect(heads.count == 16 && leftOver == 0, "\(heads.count) whole answers of \(received.count) bytes, \(leftOver) more")
                #expect(heads.last?.lowercased().contains("connection: close") == true)
            }
        }
    }

    @Test(
        "16 spends and a 17th request pipelined in one write: the 16 spends are answered 200 and charged, then the connection closes; the 17th is not handled"
    )
    func pipelinedSpendsAnswered() async throws {
        let environment = ["STOREKEEPER_PORT": "0", "STOREKEEPER_ADMIN_KEYS": "admin-key-pipelined-01"]
        try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
            try await harness.components.application().test(.live) { client in
                let port = try #require(client.port)
                let topUp = try await client.execute(
                    uri: "/admin/accounts/piped/credits", method: .post,
                    headers: [.authorization: "Bearer admin-key-pipelined-01", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 100, "reason": "test", "idempotencyKey": "top"}"#))
                #expect(topUp.status == .created, "\(String(buffer: topUp.body))")
                let body = #"{"meter": "ai_requests", "amount": 1}"#
                func spend(_ key: String) -> String {
                    "POST /v1/accounts/piped/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(StorekeeperHarness.apiKey)\r\n"
                        + "Content-Type: application/json\r\nIdempotency-Key: \(key)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                }
                let connection = try #require(RawConnection(port: port))
                connection.send(Array(((0..<17).map { spend("p\($0)") }.joined()).utf8))
                let answers = try await connection.textUntilClosed(timeout: .seconds(10), "the 16 answers and the close")
                #expect(answers.components(separatedBy: "HTTP/1.1 200").count - 1 == 16, "\(answers)")
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = 'piped'") == 16)
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE idempotency_key = 'p16'") == 0)
            }
        }
    }
}
