import Crypto
import Events
import Foundation
import GooglePlayFake
import HTTPAPI
import HostileInput
import Hummingbird
import LocalSigning
import Logging
import NIOCore
import NIOHTTP1
import StorekeeperRuntime
import Synchronization

/// The second outside review's attacks (issue 38), each a row of `drill hostile`.
extension HostileDrill {
    /// What serve may hold at most with the default limits (docs/security.md).
    static let documentedServeBound = HTTPServerLimits().memoryBound

    /// The bearer of the service API in the drill.
    static let service = [("Authorization", "Bearer bench"), ("Content-Type", "application/json")]

    /// Serve and work of their own for these rows, with the In-App Purchase key (offers), a webhook endpoint that
    /// redirects, and the Server API pointed at that endpoint's server: the other rows' counts stay as they were.
    func secondReview(verdict: inout DrillVerdict) async throws {
        let receiver = try RedirectingReceiver()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-drill-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("AuthKey.p8")
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: key)
        let environment = [
            "STOREKEEPER_ADMIN_KEYS": Self.adminKey, "STOREKEEPER_HTTP_HEAD_TIMEOUT": "5", "STOREKEEPER_HTTP_BODY_TIMEOUT": "5",
            "STOREKEEPER_HTTP_IDLE_TIMEOUT": "5", "STOREKEEPER_WEBHOOKS": receiver.configuration,
            "STOREKEEPER_ASSA_ISSUER_ID": "drill-issuer", "STOREKEEPER_ASSA_KEY_ID": "DRILLKEY", "STOREKEEPER_ASSA_PRIVATE_KEY": key.path,
            "STOREKEEPER_ASSA_BASE_URL": receiver.base, "STOREKEEPER_ERASURE_KEY": Self.erasureKey,
            "STOREKEEPER_OFFERS":
                #"{"offers": [{"id": "welcome", "product": "pro.monthly", "audience": "active"}, {"id": "stay", "product": "pro.monthly", "audience": "active", "once_per_account": false}]}"#,
            "STOREKEEPER_RETENTION": Self.retentionPolicy,
        ].merging(Self.googleEnvironment(receiver)) { first, _ in first }
        try await receiver.running {
            try await withDrillSystem(workers: 1, clients: 16, environment: environment) { system, cluster, _ in
                try await secondReviewRows(system, receiver: receiver, verdict: &verdict)
                let attacker = NotificationSigner(signer: try JWSSigner(chain: try LocalSigningChain.generate()), bundleId: SystemUnderTest.bundleId)
                try await retentionAttacks(system, attacker: attacker, verdict: &verdict)
                verdict.check(system.serve?.hasExited == false && system.workers.allSatisfy { !$0.hasExited }, "serve and work are still running")
                await databaseStopped(system, cluster: cluster, google: receiver.google, verdict: &verdict)
                verdict.check(system.serve?.hasExited == false, "serve is still running with the database away")
            }
        }
    }

    func secondReviewRows(_ system: SystemUnderTest, receiver: RedirectingReceiver, verdict: inout DrillVerdict) async throws {
        try await lateRequestEnds(system, verdict: &verdict)
        try await partialBodies(system, verdict: &verdict)
        await collidingSpendKeys(system, verdict: &verdict)
        try await parallelOffers(system, verdict: &verdict)
        try await redirectedWebhook(system, receiver: receiver, verdict: &verdict)
        await heavyAccountIds(system, verdict: &verdict)
        await checkedQueryParameters(system, verdict: &verdict)
        await supportConsoleInputs(system, verdict: &verdict)
        try await abortedUploads(system, verdict: &verdict)
        await thirdReviewRows(system, verdict: &verdict)
        try await googleIntake(system, google: receiver.google, verdict: &verdict)
    }

    /// `GET /healthz` with `Content-Length: 1`, its byte sent after the answer: closed at the idle deadline anyway.
    func lateRequestEnds(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n".utf8)
        let connections = (0..<lateEnds).compactMap { _ in RawConnection(port: system.port) }
        for connection in connections { connection.send(request) }
        var answers = [String](repeating: "", count: connections.count)
        let answered = try await system.eventually(10) {
            for (index, connection) in connections.enumerated() {
                answers[index] += String(decoding: connection.readAvailable() ?? [], as: UTF8.self)
            }
            return answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }
        }
        for connection in connections { connection.send(Array("x".utf8)) }
        let started = ContinuousClock.now
        let closed = try await system.eventually(20) { connections.allSatisfy(\.isClosedByPeer) }
        verdict.check(
            answered && closed,
            "\(connections.count) requests whose last byte came after their answer: closed at the idle deadline "
                + "(\(String(format: "%.1f", (ContinuousClock.now - started).seconds)) s after it; 5 s here)")
    }

    /// Connections each sending 62 KiB of a 400,000-byte notification, then stalling: every byte counts against the
    /// body budget, so serve's memory stays within the documented bound and it still answers.
    func partialBodies(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        let head = "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n"
        let part = Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 62 * 1024)
        let before = system.serve?.residentBytes ?? 0
        var connections: [RawConnection] = []
        var sent: [Int] = []
        for _ in 0..<partialBodyCount {
            guard let connection = RawConnection(port: system.port, timeout: .milliseconds(200)) else { continue }
            sent.append(connection.send(part))
            connections.append(connection)
        }
        // The rest of each part the socket buffers did not take yet, for a second (the body deadline is 5 s).
        let resent = ContinuousClock.now
        while ContinuousClock.now - resent < .seconds(1) {
            for (index, connection) in connections.enumerated() where sent[index] < part.count && !connection.isClosedByPeer {
                sent[index] += connection.send(Array(part[sent[index]...]))
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let resident = system.serve?.peakResidentBytes ?? 0
        let started = ContinuousClock.now
        let health = await system.request("/healthz", timeout: 5)
        let spend = await system.request(
            "/v1/accounts/\(UUID())/usage", method: .POST, headers: Self.service,
            body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#), timeout: 5)
        let notification = try system.subscribe(9_100, at: Date()).body
        let valid = await system.post(notification, timeout: 5)
        let seconds = (ContinuousClock.now - started).seconds
        let held = connections.filter { !$0.isClosedByPeer }.count
        say(
            "  \(connections.count) connected, \(sent.reduce(0, +) >> 20) MiB sent, \(held) still open; serve \(before >> 20) MB before, peak \(resident >> 20) MB"
        )
        verdict.check(
            resident < Self.documentedServeBound,
            "\(connections.count) stalled partial bodies: serve's peak is \(resident >> 20) MB (documented bound \(Self.documentedServeBound >> 20) MB)"
        )
        verdict.check(
            health.status == 200 && (spend.status == 200 || spend.status == 402) && seconds < 2,
            "beside them /healthz answers 200 and a spend behind the service key \(spend.status.map(String.init) ?? "none") (\(String(format: "%.3f", seconds)) s)"
        )
        // The intakes' share of the body budget may be full (198 of these bodies fill its 12 MiB, with 12 KiB left):
        // a notification is then answered 503, which Apple retries, and 200 once the stalled bodies' deadline has
        // closed them.
        var retried = valid
        if valid.status == 503 {
            _ = try await system.eventually(15) { connections.allSatisfy(\.isClosedByPeer) }
            retried = await system.post(notification, timeout: 5)
        }
        verdict.check(
            (valid.status == 200 || valid.status == 503) && retried.status == 200,
            "a valid notification beside them: \(valid.status.map(String.init) ?? "none") (503 while the intakes' share is full), then \(retried.status.map(String.init) ?? "none") after their deadline"
        )
    }

    /// Account `c` with key `x:y` and account `c:x` with key `y`: both charged.
    func collidingSpendKeys(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let suffix = UUID().uuidString.prefix(8)
        let (first, second) = ("c\(suffix)", "c\(suffix):x")
        for (account, key) in [(first, "x:y"), (second, "y")] {
            _ = await system.request(
                "/v1/accounts/\(account)/usage", method: .POST, headers: Self.service,
                body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(key)"}"#))
        }
        var remaining: [Int?] = []
        for account in [first, second] {
            let status = await system.request("/v1/accounts/\(account)/status", headers: Self.service)
            let object = try? JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any]
            remaining.append(((object?["credits"] as? [String: Any])?["ai_requests"] as? [String: Any])?["remaining"] as? Int)
        }
        verdict.check(remaining == [4, 4], "spends as c with key x:y and as c:x with key y are both charged (remaining \(remaining))")
    }

    /// 20 requests at once for a once-per-account offer: one signature.
    func parallelOffers(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        let account = UUID()
        _ = await system.post(try system.subscribe(9_200, account: account, at: Date()).body)
        _ = try await system.eventually(30) {
            try await system.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(account.uuidString.lowercased())'") == 1
        }
        let body = ByteBuffer(string: #"{"accountId": "\#(account.uuidString.lowercased())", "offerId": "welcome"}"#)
        let statuses = await withTaskGroup(of: UInt?.self) { group in
            for _ in 0..<20 {
                group.addTask { await system.request("/v1/offers/promotional", method: .POST, headers: Self.service, body: body).status }
            }
            return await group.reduce(into: [UInt?]()) { $0.append($1) }
        }
        let signed = statuses.filter { $0 == 200 }.count
        verdict.check(
            signed == 1 && statuses.filter { $0 == 403 }.count == 19,
            "20 parallel requests for a once-per-account offer: \(signed) signed (one), the rest 403")
        let foreign = await system.request(
            "/v1/offers/promotional", method: .POST, headers: Self.service,
            body: ByteBuffer(string: #"{"accountId": "\#(account.uuidString.lowercased())", "offerId": "stay", "appAccountToken": "\#(UUID())"}"#))
        verdict.check(
            foreign.status == 403,
            "a signature for another account's appAccountToken is refused: 403 (got \(foreign.status.map(String.init) ?? "none"))")
    }

    /// A receiver answering 307 to another address: nothing reaches that address, the attempt is a failure.
    func redirectedWebhook(_ system: SystemUnderTest, receiver: RedirectingReceiver, verdict: inout DrillVerdict) async throws {
        let account = "depleted-\(UUID().uuidString.prefix(8))"
        _ = await system.request(
            "/v1/accounts/\(account)/usage", method: .POST, headers: Self.service,
            body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 5, "idempotencyKey": "all"}"#))
        let attempted = try await system.eventually(30) {
            try await system.count("SELECT count(*) FROM webhook_attempts WHERE status_code = 307") >= 1
        }
        let error = try await system.text("SELECT coalesce(max(error), '') FROM webhook_attempts WHERE status_code = 307")
        let delivered = try await system.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'")
        verdict.check(
            attempted && delivered == 0 && receiver.redirectedHits == 0 && error.contains(receiver.target),
            "a receiver answering 307: not followed (\(receiver.redirectedHits) requests reached its target), a failed attempt naming the Location")
    }

    /// An account id of one visible character made of 3,001 bytes: 400 everywhere.
    func heavyAccountIds(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let heavy = ("e" + String(repeating: "\u{0301}", count: 1_500)).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        var wrong: [String] = []
        for (path, method, body) in [
            ("/v1/accounts/\(heavy)/consent", HTTPMethod.PUT, #"{"consented": true}"#),
            ("/v1/accounts/\(heavy)/usage", .POST, #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#),
            ("/v1/accounts/\(heavy)/purchase-intents", .POST, "{}"),
            ("/v1/accounts/\(heavy)/status", .GET, ""),
        ] {
            let answer = await system.request(path, method: method, headers: Self.service, body: body.isEmpty ? nil : ByteBuffer(string: body))
            if answer.status != 400 { wrong.append("\(method) \(path.prefix(40))…: \(answer.status.map(String.init) ?? "none")") }
        }
        verdict.check(wrong.isEmpty, "an account id of one character and 3,001 bytes: 400 on every route" + Self.listed(wrong))
    }

    /// Query parameters with a NUL byte.
    func checkedQueryParameters(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let admin = [("Authorization", "Bearer \(Self.adminKey)"), ("Content-Type", "application/json")]
        let redeliver = await system.request("/admin/events/\(UUID())/redeliver?endpoint=%00", method: .POST, headers: admin)
        let events = await system.request("/admin/events?account=%00", headers: admin)
        verdict.check(
            redeliver.status == 400 && events.status == 400,
            "query parameters with a NUL: redeliver?endpoint=%00 \(redeliver.status.map(String.init) ?? "none"), events?account=%00 \(events.status.map(String.init) ?? "none") (400 each)"
        )
    }

    /// Uploads abandoned mid-body: no error-level log line.
    func abortedUploads(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        let errorsBefore = Self.errorLines(system.serve?.output ?? "")
        let head = "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n"
        for _ in 0..<abortedUploadCount {
            RawConnection(port: system.port)?.send(Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 4 * 1024))
        }
        try await Task.sleep(for: .seconds(1))
        let errors = Self.errorLines(system.serve?.output ?? "") - errorsBefore
        verdict.check(errors == 0, "\(abortedUploadCount) uploads abandoned mid-body: \(errors) error-level log lines (none)")
    }

    static func errorLines(_ output: String) -> Int {
        output.split(separator: "\n").filter { $0.contains(#""level":"error""#) }.count
    }

    /// A hold id the stopped database is asked about.
    static let stoppedHold = "8f0b5a52-1d7e-4c4e-9a51-3c2f6d0e7b19"

    /// The database stopped: every route answers 503 within its deadline.
    func databaseStopped(_ system: SystemUnderTest, cluster: PrivateCluster, google: FakeGooglePlay, verdict: inout DrillVerdict) async {
        // Made before the stop: the push's token is checked first (its keys are held already), then the database is asked.
        let googlePush = try? Self.googlePush(google)
        cluster.stop()
        try? await retentionWithDatabaseStopped(system, verdict: &verdict)
        let admin = [("Authorization", "Bearer \(Self.adminKey)"), ("Content-Type", "application/json")]
        let routes: [(String, HTTPMethod, [(String, String)], String?)] = [
            ("/v1/accounts/a/status", .GET, Self.service, nil),
            ("/v1/accounts/a/usage", .POST, Self.service, #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#),
            ("/v1/accounts/a/holds", .POST, Self.service, #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k"}"#),
            ("/v1/holds/\(Self.stoppedHold)/settle", .POST, Self.service, #"{"amount": 1}"#),
            ("/v1/accounts/a/holds/k/release", .POST, Self.service, nil),
            ("/v1/holds/\(Self.stoppedHold)", .GET, Self.service, nil),
            ("/v1/accounts/a/usage/k/reverse", .POST, Self.service, nil),
            ("/v1/events", .GET, Self.service, nil),
            ("/v1/accounts/a/consent", .PUT, Self.service, #"{"consented": true}"#),
            ("/v1/accounts/a/refund-requests", .GET, Self.service, nil),
            ("/v1/stores/google_play/subscriptions/drill-token", .GET, Self.service, nil),
            ("/v1/subscriptions/2000000001", .GET, Self.service, nil),
            ("/v1/offers/promotional", .POST, Self.service, #"{"accountId": "a", "offerId": "welcome"}"#),
            ("/admin/stats", .GET, admin, nil),
            ("/admin/jobs", .GET, admin, nil),
            ("/admin/events", .GET, admin, nil),
            ("/admin", .GET, admin, nil),
            ("/admin/audit", .GET, admin, nil),
            ("/admin/analytics/mrr", .GET, admin, nil),
            ("/admin/search?q=a", .GET, admin, nil),
            ("/admin/accounts/a/export", .POST, admin, nil),
            ("/admin/accounts/a/erase", .POST, admin, #"{"confirm": "a"}"#),
            ("/admin/accounts/a/extensions", .POST, admin, #"{"days": 3, "reason": "other"}"#),
            ("/admin/extensions", .POST, admin, #"{"productId": "pro.monthly", "days": 3, "reason": "other", "dryRun": true}"#),
            ("/admin/accounts/a/apple-refunds", .GET, admin, nil),
            ("/admin/extensions/drill-request", .GET, admin, nil),
            ("/admin/accounts/a/credits", .POST, admin, #"{"meter": "ai_requests", "amount": 5, "reason": "x", "idempotencyKey": "k"}"#),
            ("/admin/accounts/a/grants", .POST, admin, #"{"tier": "pro", "duration": "P7D", "reason": "x"}"#),
            ("/notifications/google", .POST, googlePush?.headers ?? [], googlePush?.body),
        ]
        // Eight at a time: a request's wait for one of the client's connections would be counted as the route's.
        var answers: [(route: String, status: UInt?, body: String, seconds: Double)] = []
        for batch in stride(from: 0, to: routes.count, by: 8).map({ Array(routes[$0..<min($0 + 8, routes.count)]) }) {
            answers += await withTaskGroup(of: (String, UInt?, String, Double).self) { group in
                for (path, method, headers, body) in batch {
                    group.addTask {
                        let started = ContinuousClock.now
                        let answer = await system.request(
                            path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }, timeout: 30)
                        return ("\(method) \(path)", answer.status, answer.body, (ContinuousClock.now - started).seconds)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let wrong = answers.filter { $0.status != 503 || $0.seconds > 8 }.map {
            "\($0.route): \($0.status.map(String.init) ?? "no answer (\($0.body))") in \(String(format: "%.1f", $0.seconds)) s"
        }
        let slowest = answers.map(\.seconds).max() ?? 0
        verdict.check(
            wrong.isEmpty,
            "the database stopped: \(routes.count) routes each answer 503 within their 5-s deadline (slowest \(String(format: "%.1f", slowest)) s)"
                + Self.listed(wrong))
        // A credit write handed to its group may commit after the route stopped waiting: its 503 must not say nothing
        // was done, or a client would retry under a new key and be charged twice.
        let writes = ["/usage", "/holds", "/settle", "/release", "/reverse"]
        let unsaid = answers.filter { answer in
            answer.route.hasPrefix("POST") && writes.contains { answer.route.hasSuffix($0) } && !answer.body.contains("may or may not have been made")
        }.map(\.route)
        verdict.check(
            unsaid.isEmpty, "the database stopped: every credit write's 503 says it may or may not have been made" + Self.listed(unsaid))
    }
}

/// A webhook endpoint that answers every delivery with a 307 to another path of its own, and counts what reaches
/// that path (nothing should).
final class RedirectingReceiver: Sendable {
    let port: Int
    /// Google, whose push-token keys this receiver also serves.
    let google: FakeGooglePlay
    private let hits = Atomic<Int>(0)

    init() throws {
        port = try PrivateCluster.freePort()
        google = try FakeGooglePlay()
    }

    var base: String { "http://127.0.0.1:\(port)" }
    var target: String { base + "/elsewhere" }
    var redirectedHits: Int { hits.load(ordering: .relaxed) }

    /// `STOREKEEPER_WEBHOOKS`: only `credits.depleted`, so the drill's thousands of other events cost nothing.
    var configuration: String {
        "{endpoints: [{name: redirecting, url: 'http://127.0.0.1:\(port)/hook', secrets: ['\(WebhookSignature.Secret.generate().encoded)'], types: [credits.depleted]}]}"
    }

    /// Serves until `body` returns.
    func running<Result>(_ body: () async throws -> Result) async throws -> Result {
        let router = Router()
        let target = self.target
        router.post("/hook") { _, _ in Response(status: .temporaryRedirect, headers: [.location: target]) }
        // The Server API's Get Notification History, which `work` asks once at start: nothing missed.
        router.post("/inApps/v1/notifications/history") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"notificationHistory": [], "hasMore": false}"#)))
        }
        let google = self.google
        router.get("/oauth2/v3/certs") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: google.keySetDocument())))
        }
        router.post("/elsewhere") { _, _ -> HTTPResponse.Status in
            self.hits.add(1, ordering: .relaxed)
            return .ok
        }
        // Its own shutdown, cancelled with the drill, is no finding.
        var logger = Logger(label: "storekeeper.drill.receiver")
        logger.logLevel = .critical
        let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await application.runService(gracefulShutdownSignals: []) }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
