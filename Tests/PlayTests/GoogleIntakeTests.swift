import Foundation
import GooglePlayFake
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// `POST /notifications/google` through the real router, queue, worker and PostgreSQL, with Google's keys served by
/// the fake over HTTP: what Pub/Sub's retries and a stranger meet.
@Suite("Google Play push intake, on real PostgreSQL")
struct GoogleIntakeTests {
    static let package = "com.example.storekeeper"
    static let audience = "https://storekeeper.example.com/notifications/google"
    static let account = "play-push@storekeeper-demo.iam.gserviceaccount.com"

    /// A Storekeeper taking Play pushes for ``package``, its certificates read from `fake` over HTTP.
    static func run(
        worker: Bool = true, _ body: @escaping @Sendable (FakeGooglePlay, StorekeeperHarness, any TestClientProtocol) async throws -> Void
    ) async throws {
        let fake = try FakeGooglePlay()
        try await Application(router: fake.router()).test(.live) { live in
            let environment = [
                "STOREKEEPER_GOOGLE_PACKAGE_NAME": package, "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": audience,
                "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": account,
                "STOREKEEPER_GOOGLE_CERTS_URL": "http://127.0.0.1:\(live.port!)/oauth2/v3/certs",
            ]
            try await StorekeeperHarness.run(worker: worker, environment: environment) { harness in
                try await harness.withHTTP { client in try await body(fake, harness, client) }
            }
        }
    }

    static func post(_ client: any TestClientProtocol, _ body: [UInt8], token: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: "/notifications/google", method: .post, headers: headers, body: ByteBuffer(bytes: body))
    }

    static func token(_ fake: FakeGooglePlay) throws -> String {
        try fake.pushToken(.init(audience: audience, email: account))
    }

    @Test("a verified push is stored and enqueued once; a retry is a duplicate; the worker files its token; a test notification is recorded")
    func acceptedOnce() async throws {
        try await Self.run { fake, harness, client in
            let notification = FakeGooglePlay.subscriptionNotification(packageName: Self.package, type: 4, purchaseToken: "token-purchased-1")
            let (id, body) = fake.pushBody(notification)
            let first = try await Self.post(client, body, token: try Self.token(fake))
            let firstAnswer = try first.answer(GoogleIntakeAnswer.self)
            #expect(first.status == .ok && firstAnswer.status == "accepted" && firstAnswer.messageId == id)
            let again = try await Self.post(client, body, token: try Self.token(fake))
            #expect(try again.status == .ok && again.answer(GoogleIntakeAnswer.self).status == "duplicate")
            try await eventually("the notification to be processed") {
                try await harness.count("SELECT count(*) FROM google_notifications WHERE message_id = '\(id)' AND outcome = 'recorded'") == 1
            }
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM google_purchase_tokens WHERE purchase_token = 'token-purchased-1' AND kind = 'subscription' AND last_notification_type = 4"
                ) == 1)
            let waiting = try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'google-notification'")
            let finished = try await harness.count("SELECT count(*) FROM job_history WHERE kind = 'google-notification'")
            #expect(waiting + finished == 1, "one job for two deliveries")
            // A renewal sent before the purchase's notification arrived later keeps the newest type on the token.
            let renewed = FakeGooglePlay.subscriptionNotification(
                packageName: Self.package, type: 2, purchaseToken: "token-purchased-1", at: Date().addingTimeInterval(60))
            #expect(try await Self.post(client, fake.pushBody(renewed).body, token: try Self.token(fake)).status == .ok)
            let stale = FakeGooglePlay.subscriptionNotification(
                packageName: Self.package, type: 3, purchaseToken: "token-purchased-1", at: Date().addingTimeInterval(-600))
            #expect(try await Self.post(client, fake.pushBody(stale).body, token: try Self.token(fake)).status == .ok)
            try await eventually("all three to be processed") {
                try await harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'recorded'") == 3
            }
            #expect(try await harness.count("SELECT count(*) FROM google_purchase_tokens WHERE last_notification_type = 2") == 1)
            let test = fake.pushBody(FakeGooglePlay.testNotification(packageName: Self.package))
            #expect(try await Self.post(client, test.body, token: try Self.token(fake)).answer(GoogleIntakeAnswer.self).status == "accepted")
            try await eventually("the test notification to be recorded") {
                try await harness.count("SELECT count(*) FROM google_notifications WHERE message_id = '\(test.messageId)' AND outcome = 'test'") == 1
            }
            // A kind Google adds later is stored and acknowledged, and the worker records it as unknown.
            let future = fake.pushBody(["version": "1.0", "packageName": Self.package, "futureKindNotification": ["x": 1]])
            #expect(try await Self.post(client, future.body, token: try Self.token(fake)).answer(GoogleIntakeAnswer.self).status == "accepted")
            try await eventually("the unknown kind to be recorded") {
                try await harness.count("SELECT count(*) FROM google_notifications WHERE message_id = '\(future.messageId)' AND outcome = 'unknown'")
                    == 1
            }
            #expect(fake.certificateReads == 1, "Google's keys were read once for six pushes")
        }
    }

    @Test("no token, a stranger's token, the wrong audience: 401 before the body is read, nothing stored; bad bodies 400; another app's 200 ignored")
    func refused() async throws {
        try await Self.run(worker: false) { fake, harness, client in
            let valid = fake.pushBody(FakeGooglePlay.subscriptionNotification(packageName: Self.package, type: 4, purchaseToken: "token-refused"))
                .body
            let stranger = try fake.pushToken(.init(audience: Self.audience, email: Self.account), key: try fake.strangerKey())
            let otherAudience = try fake.pushToken(.init(audience: "https://other.example/push", email: Self.account))
            for (label, token) in [("no token", nil), ("a stranger's key", stranger), ("another audience", otherAudience), ("garbage", "x.y.z")]
                as [(String, String?)]
            {
                let answer = try await Self.post(client, valid, token: token)
                #expect(answer.status == .unauthorized, "\(label): \(answer.status)")
                #expect(try answer.answer(ErrorAnswer.self).error == "verification_failed", "\(label)")
                #expect(answer.headers[.wwwAuthenticate] != nil, "\(label)")
            }
            let token = try Self.token(fake)
            func wrapped(_ data: String) -> [UInt8] {
                Array(
                    #"{"message":{"data":"\#(Data(data.utf8).base64EncodedString())","messageId":"77"},"subscription":"projects/p/subscriptions/s"}"#
                        .utf8)
            }
            let bad: [(String, [UInt8])] = [
                ("not JSON", Array("hello".utf8)),
                ("unwrapped (raw data)", Array(#"{"version":"1.0","packageName":"com.example.storekeeper"}"#.utf8)),
                ("no messageId", Array(#"{"message":{"data":"e30="},"subscription":"projects/p/subscriptions/s"}"#.utf8)),
                ("data not base64", Array(#"{"message":{"data":"***","messageId":"1"},"subscription":"projects/p/subscriptions/s"}"#.utf8)),
                ("data not a notification", wrapped(#"{"hello":"world"}"#)),
                (
                    "two kinds at once",
                    wrapped(
                        #"{"packageName":"com.example.storekeeper","testNotification":{},"subscriptionNotification":{"notificationType":4,"purchaseToken":"t"}}"#
                    )
                ),
                (
                    "token with spaces",
                    wrapped(#"{"packageName":"com.example.storekeeper","subscriptionNotification":{"notificationType":4,"purchaseToken":"a b"}}"#)
                ),
                (
                    "type not a number",
                    wrapped(
                        #"{"packageName":"com.example.storekeeper","subscriptionNotification":{"notificationType":"RENEWED","purchaseToken":"t"}}"#)
                ),
            ]
            for (label, body) in bad {
                let answer = try await Self.post(client, body, token: token)
                #expect(answer.status == .badRequest, "\(label): \(answer.status)")
                #expect(try answer.answer(ErrorAnswer.self).error == "bad_request", "\(label)")
            }
            let other = fake.pushBody(FakeGooglePlay.subscriptionNotification(packageName: "com.other.app", type: 4, purchaseToken: "token-other"))
            let ignored = try await Self.post(client, other.body, token: token)
            #expect(try ignored.status == .ok && ignored.answer(GoogleIntakeAnswer.self).status == "ignored")
            // Another app's notification is not read at all: whatever it holds, it is acknowledged, not refused.
            for odd in [
                #"{"packageName":"com.other.app","futureKindNotification":{}}"#,
                #"{"packageName":"com.other.app","subscriptionNotification":{"purchaseToken":""}}"#,
            ] {
                #expect(try await Self.post(client, wrapped(odd), token: token).answer(GoogleIntakeAnswer.self).status == "ignored", "\(odd)")
            }
            let huge = [UInt8](repeating: 0x20, count: 600 * 1024)
            #expect(try await Self.post(client, huge, token: token).status == .contentTooLarge)
            #expect(try await harness.count("SELECT count(*) FROM google_notifications") == 0)
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'google-notification'") == 0)
        }
    }

    @Test("google-auth (PyPI) verifies the fake's push tokens against its certificates, as PEM and as JWK set")
    func googleAuthAgrees() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_GOOGLE_PYTHON"] else {
            print("skipped: google-auth is not installed (scripts/test installs it from PyPI)")
            return
        }
        let fake = try FakeGooglePlay()
        try fake.rotateKey()
        try await Application(router: fake.router()).test(.live) { live in
            let base = "http://127.0.0.1:\(live.port!)"
            let script = """
                import sys
                import google.auth.transport.requests as transport
                from google.oauth2 import id_token
                token, audience, base = sys.argv[1:4]
                request = transport.Request()
                for url in (base + "/oauth2/v1/certs", base + "/oauth2/v3/certs"):
                    claims = id_token.verify_token(token, request, audience=audience, certs_url=url)
                    print(claims["iss"], claims["email"], claims["email_verified"])
                try:
                    id_token.verify_token(token, request, audience="https://someone.else/", certs_url=base + "/oauth2/v3/certs")
                    print("accepted another audience")
                except Exception:
                    print("refused another audience")
                """
            let (status, lines) = try await PythonScript.run(python, script, arguments: [try Self.token(fake), Self.audience, base])
            #expect(status == 0, "\(lines)")
            let verified = "https://accounts.google.com \(Self.account) True"
            #expect(lines.prefix(3) == [verified, verified, "refused another audience"], "\(lines)")
        }
    }
}
