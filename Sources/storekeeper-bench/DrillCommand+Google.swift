import Foundation
import GooglePlayFake
import HostileInput
import NIOCore

extension HostileDrill {
    static let googlePackage = "com.example.drill"
    static let googleAudience = "https://drill.example/notifications/google"
    static let googleAccount = "play-push@drill.iam.gserviceaccount.com"

    /// `STOREKEEPER_GOOGLE_*` for a Storekeeper whose Google certificates `receiver` serves.
    static func googleEnvironment(_ receiver: RedirectingReceiver) -> [String: String] {
        [
            "STOREKEEPER_GOOGLE_PACKAGE_NAME": googlePackage, "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": googleAudience,
            "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": googleAccount, "STOREKEEPER_GOOGLE_CERTS_URL": receiver.base + "/oauth2/v3/certs",
        ]
    }

    /// A push request `POST /notifications/google` as Pub/Sub sends it, signed by `google`.
    static func googlePush(_ google: FakeGooglePlay, token: String? = nil, body: [UInt8]? = nil) throws -> (headers: [(String, String)], body: String)
    {
        let token = try token ?? google.pushToken(.init(audience: googleAudience, email: googleAccount))
        let body =
            body ?? google.pushBody(FakeGooglePlay.subscriptionNotification(packageName: googlePackage, type: 4, purchaseToken: "drill-token")).body
        return ([("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], String(decoding: body, as: UTF8.self))
    }

    /// Google Play's intake under a stranger: forged tokens and made-up key ids (401, a bounded number of key
    /// fetches), a replayed push (stored once), another app's (200, not stored) and the costly JSON shapes under a
    /// valid token (400).
    func googleIntake(_ system: SystemUnderTest, google: FakeGooglePlay, verdict: inout DrillVerdict) async throws {
        func post(_ push: (headers: [(String, String)], body: String)) async -> UInt? {
            await system.request("/notifications/google", method: .POST, headers: push.headers, body: ByteBuffer(string: push.body)).status
        }
        let claims = FakeGooglePlay.PushClaims(audience: Self.googleAudience, email: Self.googleAccount)
        // Signed before the clock starts: one stranger's key, under Google's kid and under made-up ones.
        let stranger = try google.strangerKey()
        var tokens: [String] = []
        for index in 0..<100 {
            tokens.append(try google.pushToken(claims, key: stranger))
            tokens.append(try google.pushToken(claims, key: stranger, header: ["alg": "RS256", "kid": "made-up-\(index)", "typ": "JWT"]))
        }
        let readsBefore = google.certificateReads
        let started = ContinuousClock.now
        var forged: [UInt?] = []
        for token in tokens { forged.append(await post(try Self.googlePush(google, token: token))) }
        let unauthenticated = await system.request(
            "/notifications/google", method: .POST, headers: [("Content-Type", "application/json")],
            body: ByteBuffer(string: try Self.googlePush(google).body)
        ).status
        let reads = google.certificateReads - readsBefore
        // One read for the first unknown kid, then at most one per 30 s while they keep coming.
        let allowed = 1 + Int((ContinuousClock.now - started).seconds / 30)
        verdict.check(
            forged.allSatisfy { $0 == 401 } && unauthenticated == 401 && reads <= allowed,
            "200 forged Google push tokens (a stranger's key, made-up kids) and none at all: all 401, Google's keys read \(reads) time(s) (at most \(allowed))"
        )
        let push = try Self.googlePush(google)
        var replays: [UInt?] = []
        for _ in 0..<50 { replays.append(await post(push)) }
        let other = try Self.googlePush(
            google, body: google.pushBody(FakeGooglePlay.subscriptionNotification(packageName: "com.other.app", type: 4, purchaseToken: "other")).body
        )
        let ignored = await post(other)
        let stored = try await system.count("SELECT count(*) FROM google_notifications")
        verdict.check(
            replays.allSatisfy { $0 == 200 } && ignored == 200 && stored == 1,
            "one Play push sent 50 times and another app's once: all 200, stored once (\(stored))")
        let shapesStarted = ContinuousClock.now
        var shapes: [UInt?] = []
        for shape in HostileShapes.all(size: 500 * 1024) {
            shapes.append(await post(try Self.googlePush(google, body: shape.bytes)))
        }
        let seconds = Double((ContinuousClock.now - shapesStarted).components.seconds)
        verdict.check(
            shapes.allSatisfy { $0 == 400 } && seconds < 30,
            "\(shapes.count) costly JSON shapes under a valid Google push token: all 400 in \(Int(seconds)) s")
    }
}
