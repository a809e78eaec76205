import Application
import AsyncHTTPClient
import Foundation
import GooglePlay
import GooglePlayAPI
import GooglePlayFake
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import IntegrationSupport

/// The worker reading Play: a notification names a token, the worker reads it from the (fake) Play Developer API with
/// a service-account token, keeps the read and derives the subscription — here through the real intake, queue,
/// worker and PostgreSQL, and the API client on its own.
@Suite("Google Play reads, on real PostgreSQL")
struct GooglePlayReadTests {
    static let yearly = FakeGooglePlay.Plan(productId: "pro", basePlanId: "yearly", period: 365 * 86_400, priceMicros: 99_990_000)

    @Test("purchase, renewal and upgrade reach google_subscriptions through reads; the same pushes again, in another order, change nothing")
    func purchaseRenewalUpgrade() async throws {
        try await GooglePlayWorld.run { world in
            let now = Date()
            let (token, bought) = world.fake.buy(GooglePlayWorld.monthly, accountToken: "acct-token-7", at: now)
            var sent: [[String: Any]] = [bought]
            #expect(try await world.push(bought).answer(GoogleIntakeAnswer.self).status == "accepted")
            try await eventually("the purchase to be read and derived") {
                try await world.subscriptions().first?.contains("|SUBSCRIPTION_STATE_ACTIVE|") == true
            }
            let first = try #require(try await world.subscriptions().first)
            #expect(first.hasPrefix("\(token)|\(token)|\(token)|pro/monthly|SUBSCRIPTION_STATE_ACTIVE|"), "\(first)")
            #expect(first.hasSuffix("|t|f|acct-token-7|1"), "\(first)")
            // Two renewals, each read before the next (a read sees the token's state now: a period paid and renewed
            // again between two reads is not seen); the first read arrives behind a 429 and a 503 the client waits out.
            world.fake.failNext([429, 503])
            for periods in 2...3 {
                let renewed = try world.fake.renew(token, at: now)
                sent.append(renewed)
                try await world.push(renewed)
                try await eventually("renewal \(periods - 1) to be read") { try await world.subscriptions().first?.hasSuffix("|\(periods)") == true }
            }
            // An upgrade: a new token linked to the old one.
            let (upgraded, notification) = try world.fake.replace(token, with: Self.yearly, at: now)
            sent.append(notification)
            try await world.push(notification)
            try await eventually("the upgrade to be derived") { try await world.subscriptions().first?.contains("|\(upgraded)|") == true }
            let after = try await world.subscriptions()
            #expect(after.count == 1, "one subscription for the chain: \(after)")
            #expect(after.first?.hasPrefix("\(token)|\(upgraded)|\(token),\(upgraded)|pro/yearly|SUBSCRIPTION_STATE_ACTIVE|") == true, "\(after)")
            #expect(after.first?.hasSuffix("|4") == true, "three monthly periods and the yearly one: \(after)")
            // Every notification again, newest first, each twice under new message ids: re-read, derived the same.
            let readsBefore = try await world.harness.count("SELECT count(*) FROM google_subscription_reads")
            for notification in sent.reversed() + sent {
                #expect(try await world.push(notification).answer(GoogleIntakeAnswer.self).status == "accepted")
            }
            try await eventually("every push to be processed") {
                try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome IS NULL") == 0
            }
            #expect(try await world.subscriptions() == after)
            #expect(try await world.harness.count("SELECT count(*) FROM google_subscription_reads") >= readsBefore)
            #expect(try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'read'") == 2 * sent.count + sent.count)
            #expect(world.fake.grants == 1, "one access token served every read")
        }
    }

    @Test("a token Play does not know is recorded as not_found; without a service account tokens are filed, nothing is read")
    func unknownAndUnconfigured() async throws {
        try await GooglePlayWorld.run { world in
            let unknown = FakeGooglePlay.subscriptionNotification(packageName: GooglePlayWorld.package, type: 4, purchaseToken: "never-sold")
            try await world.push(unknown)
            try await eventually("the unknown token to be answered") {
                try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'not_found'") == 1
            }
            #expect(try await world.subscriptions() == [])
            // Google's 400 "Invalid Value" is final: recorded as refused, not retried for hours.
            world.fake.failNext([400])
            let (_, bought) = world.fake.buy(GooglePlayWorld.monthly, accountToken: nil, at: Date())
            try await world.push(bought)
            try await eventually("the refused read to be recorded") {
                try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'refused'") == 1
            }
            // Not retried: the job leaves the table (its completion may trail the recorded outcome by a moment).
            try await eventually("the refused read's job to end") {
                try await world.harness.count("SELECT count(*) FROM jobs WHERE kind = 'google-notification'") == 0
            }
        }
        try await GooglePlayWorld.run(readsPlay: false) { world in
            let (_, bought) = world.fake.buy(GooglePlayWorld.monthly, accountToken: nil, at: Date())
            try await world.push(bought)
            try await eventually("the token to be filed") {
                try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'recorded'") == 1
            }
            #expect(try await world.harness.count("SELECT count(*) FROM google_purchase_tokens") == 1)
            #expect(world.fake.apiRequests == 0 && world.fake.grants == 0)
        }
    }

    @Test("google sync files and reads a first import's tokens, then reads every filed token again; an unknown token is counted, not fatal")
    func sync() async throws {
        try await GooglePlayWorld.run(worker: false) { world in
            let bought = (0..<3).map { world.fake.buy(GooglePlayWorld.monthly, accountToken: "import-\($0)", at: Date()).token }
            let subscriptions = GooglePlaySync(
                client: world.harness.client, subscriptions: world.harness.components.googlePlaySubscriptions,
                products: world.harness.components.googlePlayProducts, logger: TestDatabase.logger)
            let first = try await subscriptions.sync(tokens: bought + ["never-sold"])
            #expect(first == .init(read: 3, notFound: 1, refused: 0, failed: 0))
            #expect(try await world.subscriptions().count == 3)
            #expect(try await world.harness.count("SELECT count(*) FROM google_purchase_tokens WHERE read_at IS NOT NULL") == 3)
            _ = try world.fake.cancel(bought[0], at: Date())
            let again = try await subscriptions.sync(tokens: nil)
            #expect(again == .init(read: 3, notFound: 1, refused: 0, failed: 0))
            #expect(try await world.subscriptions().filter { $0.contains("|SUBSCRIPTION_STATE_CANCELED|") }.count == 1)
        }
    }

    @Test("the tokens of one chain read at the same time, many times over, derive one subscription; other chains in parallel")
    func concurrentChain() async throws {
        try await GooglePlayWorld.run(worker: false) { world in
            let now = Date()
            let (first, _) = world.fake.buy(GooglePlayWorld.monthly, accountToken: "chain", at: now)
            let (second, _) = try world.fake.replace(first, with: Self.yearly, at: now)
            let (third, _) = try world.fake.replace(second, with: GooglePlayWorld.monthly, at: now.addingTimeInterval(1))
            let others = (0..<4).map { world.fake.buy(GooglePlayWorld.monthly, accountToken: "other-\($0)", at: now).token }
            let subscriptions = world.harness.components.googlePlaySubscriptions
            let play = try #require(subscriptions.play)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<6 {
                    for token in ([third, second, first] + others).shuffled() where round < 3 || [first, second, third].contains(token) {
                        group.addTask { _ = try await subscriptions.refresh(token, using: play) }
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await world.subscriptions()
            #expect(rows.count == 5, "\(rows)")
            let chain = rows.filter { $0.hasPrefix("\(first)|") }
            #expect(chain.count == 1 && chain.first?.hasPrefix("\(first)|\(third)|\(first),\(second),\(third)|") == true, "\(rows)")
        }
    }

    /// The API client alone against the fake: token caching, a revoked token granted again, retries, Google's errors.
    @Test("the client caches its token, is granted a new one after a 401, retries 429 and 5xx, and maps 404")
    func client() async throws {
        let fake = try FakeGooglePlay()
        try await Application(router: fake.router()).test(.live) { live in
            let base = "http://127.0.0.1:\(live.port!)"
            let account = try GoogleServiceAccount(json: fake.serviceAccountKeyFile(tokenURI: base + "/token"))
            let client = GooglePlayClient(
                baseURL: base, packageName: fake.packageName, tokens: GoogleAccessTokens(account: account), requestsPerMinute: 1_000_000,
                retryDelays: [.milliseconds(10), .milliseconds(10)], logger: Logger(label: "test"))
            let (token, _) = fake.buy(GooglePlayWorld.monthly, accountToken: "a", at: Date())
            for _ in 0..<3 { #expect(try await client.subscription(token).purchase.subscriptionState == .active) }
            #expect(fake.grants == 1)
            fake.revokeAccessTokens()
            #expect(try await client.subscription(token).purchase.mainLineItem?.basePlanId == "monthly")
            #expect(fake.grants == 2, "a 401 fetched a new token once")
            fake.failNext([429, 503])
            #expect(try await client.subscription(token).purchase.subscriptionState == .active)
            fake.failNext([503, 503, 503])
            await #expect(throws: GooglePlayAPIError.self) { try await client.subscription(token) }
            do {
                _ = try await client.subscription("unknown-token")
                Issue.record("an unknown token was read")
            } catch let error as GooglePlayAPIError {
                #expect(error.kind == .notFound && error.httpStatus == 404 && error.message.contains("NOT_FOUND"))
            }
            let stranger = try GoogleServiceAccount(json: (try FakeGooglePlay()).serviceAccountKeyFile(tokenURI: base + "/token"))
            let refused = GooglePlayClient(
                baseURL: base, packageName: fake.packageName, tokens: GoogleAccessTokens(account: stranger), retryDelays: [],
                logger: Logger(label: "test"))
            do {
                _ = try await refused.subscription(token)
                Issue.record("another key was granted a token")
            } catch let error as GooglePlayAPIError {
                #expect(error.kind == .unauthorized, "\(error)")
            }
        }
    }

    @Test("google-auth (PyPI) service-account credentials are granted a token by the fake and read subscriptionsv2 with it")
    func googleAuthCredentials() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_GOOGLE_PYTHON"] else {
            print("skipped: google-auth is not installed (scripts/test installs it from PyPI)")
            return
        }
        let fake = try FakeGooglePlay()
        try await Application(router: fake.router()).test(.live) { live in
            let base = "http://127.0.0.1:\(live.port!)"
            let (token, _) = fake.buy(GooglePlayWorld.monthly, accountToken: "acct", at: Date())
            let script = """
                import json, sys
                import google.auth.transport.requests as transport
                from google.oauth2 import service_account
                info, base, package, token = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
                credentials = service_account.Credentials.from_service_account_info(info, scopes=["https://www.googleapis.com/auth/androidpublisher"])
                session = transport.AuthorizedSession(credentials)
                answer = session.get(f"{base}/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/{token}")
                print(answer.status_code, answer.json()["subscriptionState"], answer.json()["lineItems"][0]["offerDetails"]["basePlanId"])
                missing = session.get(f"{base}/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/nope")
                print(missing.status_code, missing.json()["error"]["status"])
                """
            let (status, lines) = try await PythonScript.run(
                python, script,
                arguments: [String(decoding: fake.serviceAccountKeyFile(tokenURI: base + "/token"), as: UTF8.self), base, fake.packageName, token])
            #expect(status == 0, "\(lines)")
            #expect(lines.prefix(2) == ["200 SUBSCRIPTION_STATE_ACTIVE monthly", "404 NOT_FOUND"], "\(lines)")
            #expect(fake.grants == 1)
        }
    }
}
