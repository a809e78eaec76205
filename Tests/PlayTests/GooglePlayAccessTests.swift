import Application
import Foundation
import GooglePlayFake
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// An Android purchase as its customer sees it: Play's notification reaches the intake, the worker reads the token,
/// and `GET /v1/accounts/{id}/status` answers the tier, the credits and where to manage it — the expectations taken
/// from Play's subscription lifecycle (which states entitle, a new order is a new period, a linked token continues
/// the subscription) and the default catalogue (`pro/monthly` gives 1,000 AI requests a cycle).
@Suite("Google Play purchases grant access and credits, on real PostgreSQL")
struct GooglePlayAccessTests {
    /// The catalogue's `pro/monthly` and `pro/yearly` as Play bills them: calendar months.
    static let monthly = FakeGooglePlay.Plan(productId: "pro", basePlanId: "monthly", months: 1)
    static let yearly = FakeGooglePlay.Plan(productId: "pro", basePlanId: "yearly", months: 12, priceMicros: 99_990_000)

    /// The account's status document.
    static func status(_ world: GooglePlayWorld, _ account: String) async throws -> StatusAnswer {
        try await world.http.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
    }

    static func entitlement(_ status: StatusAnswer) -> EntitlementAnswer? {
        status.entitlements.first { $0.store == "google_play" }
    }

    static func remaining(_ status: StatusAnswer, _ meter: String = "ai_requests") -> Int64? {
        status.credits[meter]?.remaining
    }

    /// Pushes `notification` and waits until every stored notification is processed.
    static func deliver(_ world: GooglePlayWorld, _ notification: [String: Any]) async throws {
        #expect(try await world.push(notification).answer(GoogleIntakeAnswer.self).status == "accepted")
        try await eventually("the push to be processed") {
            try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome IS NULL") == 0
        }
    }

    @Test(
        "a purchase naming the account: pro with 1,000 credits, Play's subscription centre, the store-neutral read; acknowledged once; renewal resets the credits; cancel keeps access to the expiry, expiry ends it"
    )
    func purchaseToExpiry() async throws {
        try await GooglePlayWorld.run { world in
            let account = "android-user-1"
            let (token, bought) = world.fake.buy(Self.monthly, accountToken: account, at: world.clock.now)
            try await Self.deliver(world, bought)
            let status = try await Self.status(world, account)
            #expect(status.entitled == true, "\(status)")
            let entitlement = try #require(Self.entitlement(status), "\(status)")
            #expect(entitlement.tier == "pro" && entitlement.productId == "pro/monthly")
            #expect(entitlement.id == token && entitlement.willRenew == true)
            #expect(
                entitlement.managementUrl
                    == "https://play.google.com/store/account/subscriptions?sku=pro&package=\(GooglePlayWorld.package)", "\(entitlement)")
            #expect(Self.remaining(status) == 1000, "\(status)")
            // The operator's view names the package as the API does.
            let (shownStatus, shown) = try await TestProcess.run(
                "storekeeper", ["accounts", "show", account],
                environment: ["DATABASE_URL": world.harness.databaseURL.urlString, "STOREKEEPER_GOOGLE_PACKAGE_NAME": GooglePlayWorld.package])
            #expect(shownStatus == 0 && shown.contains("sku=pro&package=\(GooglePlayWorld.package)"), "\(shown)")

            // The store-neutral read finds it under Play's name; the App Store's name for another store is not it.
            let read = try await world.http.getWithKey("/v1/stores/google_play/subscriptions/\(token)")
            #expect(
                try read.status == .ok && read.answer(SubscriptionDetailAnswer.self).accountId == account
                    && read.answer(SubscriptionDetailAnswer.self).store == "google_play", "\(String(buffer: read.body))")
            #expect(try await world.http.getWithKey("/v1/stores/app_store/subscriptions/\(token)").status == .notFound)
            #expect(try await world.http.getWithKey("/v1/stores/play/subscriptions/\(token)").status == .badRequest)

            // Granted, so acknowledged — once, however often the purchase is read again.
            try await eventually("the purchase to be acknowledged") { world.fake.isAcknowledged(token) }
            try await Self.deliver(world, try world.fake.renew(token, at: world.clock.now))
            try await Self.deliver(world, bought)
            #expect(world.fake.acknowledgements(of: token) == 1)
            // The operator's view lists what Google sent about the subscription, by the reference's names.
            let (listedStatus, listed) = try await TestProcess.run(
                "storekeeper", ["accounts", "show", account, "--json"], environment: ["DATABASE_URL": world.harness.databaseURL.urlString])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [String: Any], "\(listed)")
            let fromGoogle = (report["events"] as? [[String: Any]] ?? []).filter { $0["originalTransactionId"] as? String == token }
            #expect(listedStatus == 0)
            #expect(
                fromGoogle.compactMap { $0["type"] as? String }.sorted()
                    == ["SUBSCRIPTION_PURCHASED", "SUBSCRIPTION_PURCHASED", "SUBSCRIPTION_RENEWED"], "\(listed)")
            #expect(fromGoogle.allSatisfy { $0["outcome"] is String }, "\(fromGoogle)")

            // A renewal is a new period: spent credits come back in full when it starts, not before.
            let spent = try await world.http.withKey(
                .post, "/v1/accounts/\(account)/usage", #"{"meter": "ai_requests", "amount": 40, "idempotencyKey": "k1"}"#)
            #expect(try spent.status == .ok && spent.answer(UsageAnswer.self).remaining == 960, "\(String(buffer: spent.body))")
            let periodEnd = try #require(world.fake.expiry(of: token))
            try await Self.deliver(world, try world.fake.renew(token, at: periodEnd.addingTimeInterval(-3600)))
            #expect(Self.remaining(try await Self.status(world, account)) == 960, "the paid next period has not started")
            world.clock.set(periodEnd.addingTimeInterval(60))
            #expect(Self.remaining(try await Self.status(world, account)) == 1000, "the new period's allowance")
            let now = world.clock.now

            try await Self.deliver(world, try world.fake.cancel(token, at: now))
            let canceled = try await Self.status(world, account)
            #expect(canceled.entitled == true && Self.entitlement(canceled)?.willRenew == false, "\(canceled)")
            try await Self.deliver(world, try world.fake.expire(token, at: now))
            let expired = try await Self.status(world, account)
            #expect(expired.entitled == false && expired.hadSubscription == true, "\(expired)")
        }
    }

    @Test("an app passing a purchase intent's token reaches that account; a purchase naming nobody grants nothing and is not acknowledged")
    func accounts() async throws {
        try await GooglePlayWorld.run { world in
            let account = "user-\(UUID().uuidString.prefix(8))"
            let intent = try await world.http.execute(
                uri: "/v1/accounts/\(account)/purchase-intents", method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
            let token = try intent.answer(PurchaseIntentAnswer.self).appAccountToken
            let (purchase, bought) = world.fake.buy(Self.monthly, accountToken: token, at: world.clock.now)
            try await Self.deliver(world, bought)
            #expect(try await Self.status(world, account).entitled == true)
            #expect(try await Self.status(world, token).entitled == false, "the token is not an account")
            try await eventually("the purchase to be acknowledged") { world.fake.isAcknowledged(purchase) }

            let (anonymous, unnamed) = world.fake.buy(Self.monthly, accountToken: nil, at: world.clock.now)
            try await Self.deliver(world, unnamed)
            let read = try await world.http.getWithKey("/v1/stores/google_play/subscriptions/\(anonymous)")
            #expect(try read.status == .ok && read.answer(SubscriptionDetailAnswer.self).accountId == nil, "\(String(buffer: read.body))")
            // The first purchase's job may still be finishing (the fake sees the acknowledgement before the job
            // completes), so each purchase's job is counted by its own key, live or done: one for the named purchase
            // (the count can find a job), none for the unnamed.
            func acknowledgeJobs(of token: String) async throws -> Int {
                let key = "\(GoogleAcknowledgeJob.jobKind):\(token)"
                return try await world.harness.count(
                    "SELECT (SELECT count(*) FROM jobs WHERE unique_key = '\(key)') + (SELECT count(*) FROM job_history WHERE unique_key = '\(key)')")
            }
            #expect(try await acknowledgeJobs(of: purchase) == 1)
            #expect(try await acknowledgeJobs(of: anonymous) == 0)
            #expect(world.fake.acknowledgements(of: anonymous) == 0)
        }
    }

    @Test(
        "a subscription bought again in the Play Store after one expired (no account of its own, outOfAppPurchaseContext) is the expired one's owner's — named at purchase or claimed — and acknowledged"
    )
    func resubscribedInTheStore() async throws {
        try await GooglePlayWorld.run { world in
            for (account, named) in [("store-named-\(UUID().uuidString.prefix(8))", true), ("store-claimed-\(UUID().uuidString.prefix(8))", false)] {
                let (first, bought) = world.fake.buy(Self.monthly, accountToken: named ? account : nil, at: world.clock.now)
                try await Self.deliver(world, bought)
                if !named {
                    let claimed = try await GooglePlayClaimTests.claim(world, account, #"{"purchaseToken": "\#(first)", "productId": "pro"}"#)
                    #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
                }
                #expect(try await Self.status(world, account).entitled == true)
                try await Self.deliver(world, try world.fake.expire(first, at: world.clock.now))
                #expect(try await Self.status(world, account).entitled == false)

                let (again, resubscribed) = try world.fake.resubscribeInStore(first, with: Self.monthly, at: world.clock.now)
                try await Self.deliver(world, resubscribed)
                let status = try await Self.status(world, account)
                #expect(status.entitled == true && Self.entitlement(status)?.id == again && Self.remaining(status) == 1000, "\(account): \(status)")
                try await eventually("the purchase bought again to be acknowledged") { world.fake.isAcknowledged(again) }
            }
        }
    }

    @Test(
        "grace keeps access, the hold ends it, recovery restores it with a new period; a pause ends it until resumed; an upgrade continues the subscription; a revocation ends access now"
    )
    func lifecycle() async throws {
        try await GooglePlayWorld.run { world in
            let account = "android-user-2"
            let (token, bought) = world.fake.buy(Self.monthly, accountToken: account, at: world.clock.now)
            try await Self.deliver(world, bought)
            func entitled() async throws -> Bool { try await Self.status(world, account).entitled == true }
            #expect(try await entitled())
            try await Self.deliver(world, try world.fake.grace(token, at: world.clock.now))
            let grace = try await Self.status(world, account)
            #expect(
                grace.entitled == true && grace.subscription?.status == "grace_period", "\(grace)")
            try await Self.deliver(world, try world.fake.hold(token, at: world.clock.now))
            #expect(try await !entitled(), "on hold")
            try await Self.deliver(world, try world.fake.recover(token, at: world.clock.now))
            #expect(try await entitled(), "recovered")
            try await Self.deliver(world, try world.fake.pause(token, at: world.clock.now))
            #expect(try await !entitled(), "paused")
            try await Self.deliver(world, try world.fake.resume(token, at: world.clock.now))
            #expect(try await entitled(), "resumed")
            #expect(try await world.harness.count("SELECT count(*) FROM subscriptions WHERE store = 'google_play'") == 1)

            let (upgraded, notification) = try world.fake.replace(token, with: Self.yearly, at: world.clock.now)
            try await Self.deliver(world, notification)
            let status = try await Self.status(world, account)
            #expect(
                Self.entitlement(status)?.productId == "pro/yearly" && Self.entitlement(status)?.id == token, "\(status)")
            #expect(
                try await world.harness.count("SELECT count(*) FROM subscriptions WHERE store = 'google_play'") == 1, "one subscription for the chain"
            )
            try await eventually("the upgrade's new token to be acknowledged") { world.fake.isAcknowledged(upgraded) }

            try await Self.deliver(world, try world.fake.revoke(upgraded, at: world.clock.now))
            #expect(try await !entitled(), "revoked: access ends now, before the year is out")
        }
    }
}

/// `POST /v1/accounts/{id}/google/purchases` as an app and a stranger meet it.
@Suite("Claiming Play purchases, on real PostgreSQL")
struct GooglePlayClaimTests {
    static func claim(_ world: GooglePlayWorld, _ account: String, _ body: String) async throws -> TestResponse {
        try await world.http.withKey(.post, "/v1/accounts/\(account)/google/purchases", body)
    }

    @Test(
        "a purchase naming nobody is claimed: read, applied, acknowledged; another account is refused under keep; unknown tokens, bad bodies and a purchase naming its account are answered"
    )
    func claims() async throws {
        try await GooglePlayWorld.run { world in
            let (token, _) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: nil, at: world.clock.now)
            // Claimed before any notification: the claim reads the token itself.
            let claimed = try await Self.claim(world, "claimer-1", #"{"purchaseToken": "\#(token)", "productId": "pro"}"#)
            #expect(
                try claimed.status == .ok && claimed.answer(StatusAnswer.self).entitled == true && claimed.answer(StatusAnswer.self).tier == "pro",
                "\(String(buffer: claimed.body))")
            try await eventually("the claimed purchase to be acknowledged") { world.fake.isAcknowledged(token) }
            let again = try await Self.claim(world, "claimer-1", #"{"purchaseToken": "\#(token)"}"#)
            #expect(try again.status == .ok && again.answer(StatusAnswer.self).entitled == true)
            let taken = try await Self.claim(world, "claimer-2", #"{"purchaseToken": "\#(token)"}"#)
            #expect(
                try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere", "\(String(buffer: taken.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/claimer-2/status").answer(StatusAnswer.self).entitled == false)
            #expect(try await world.http.getWithKey("/v1/accounts/claimer-1/status").answer(StatusAnswer.self).entitled == true)

            // A purchase whose app named its account belongs to that account, whoever claims it first.
            let (named, _) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: "owner-9", at: world.clock.now)
            let stolen = try await Self.claim(world, "claimer-3", #"{"purchaseToken": "\#(named)"}"#)
            #expect(
                try stolen.status == .conflict && stolen.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere",
                "\(String(buffer: stolen.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/claimer-3/status").answer(StatusAnswer.self).entitled == false)

            // A claim naming another product than the purchase's changes nothing; its own product id, with or without
            // the base plan, is accepted.
            let (other, _) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: nil, at: world.clock.now)
            let mismatch = try await Self.claim(world, "claimer-4", #"{"purchaseToken": "\#(other)", "productId": "max"}"#)
            #expect(
                try mismatch.status == .unprocessableContent && mismatch.answer(ErrorAnswer.self).error == "product_mismatch",
                "\(String(buffer: mismatch.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/claimer-4/status").answer(StatusAnswer.self).entitled == false)
            let matching = try await Self.claim(world, "claimer-4", #"{"purchaseToken": "\#(other)", "productId": "pro/monthly"}"#)
            #expect(try matching.status == .ok && matching.answer(StatusAnswer.self).tier == "pro", "\(String(buffer: matching.body))")

            let unknown = try await Self.claim(world, "claimer-1", #"{"purchaseToken": "never-sold"}"#)
            #expect(try unknown.status == .notFound && unknown.answer(ErrorAnswer.self).error == "purchase_not_found")
            for body in [
                #"{}"#, #"{"purchaseToken": ""}"#, #"{"purchaseToken": "a b"}"#, #"{"purchaseToken": 7}"#, "[",
                #"{"purchaseToken": "t", "productId": ""}"#,
                #"{"purchaseToken": "\#(String(repeating: "x", count: 2049))"}"#,
            ] {
                let response = try await Self.claim(world, "claimer-1", body)
                #expect(response.status == .badRequest, "\(body.prefix(40)): \(response.status)")
            }
            #expect(try await Self.claim(world, "bad%ZZ", #"{"purchaseToken": "t"}"#).status == .badRequest)
        }
    }

    @Test(
        "without a service account the claim route is not served (404 `not_configured`, naming what to set); the store-neutral read refuses an unknown store and an oversized id"
    )
    func unreadable() async throws {
        try await GooglePlayWorld.run(readsPlay: false) { world in
            let response = try await Self.claim(world, "claimer-1", #"{"purchaseToken": "t"}"#)
            #expect(try response.status == .notFound && response.answer(ErrorAnswer.self).error == "not_configured")
            #expect(try response.answer(ErrorAnswer.self).message.contains("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT") == true)
            #expect(
                try await world.http.getWithKey("/v1/stores/google_play/subscriptions/\(String(repeating: "x", count: 2049))").status == .badRequest)
            #expect(try await world.http.getWithKey("/v1/stores/operator/subscriptions/x").status == .badRequest)
            #expect(try await world.http.getWithKey("/v1/stores/google_play/subscriptions/x").status == .notFound)
        }
    }

    @Test(
        "an id used again after its erasure: the app's claim of a new Play purchase is the id's (entitled), not the erased pseudonym's"
    )
    func claimAfterErasure() async throws {
        let admin = "ada:admin:admin-key-play-erasure-01"
        try await GooglePlayWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": admin]) { world in
            let (first, notification) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: "reused-1", at: world.clock.now)
            try await GooglePlayAccessTests.deliver(world, notification)
            try await eventually("the first purchase to be applied") { world.fake.isAcknowledged(first) }
            let erased = try await world.http.execute(
                uri: "/admin/accounts/reused-1/erase", method: .post,
                headers: [.authorization: "Bearer admin-key-play-erasure-01", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"confirm": "reused-1"}"#))
            #expect(erased.status == .ok, "\(String(buffer: erased.body))")
            let (token, _) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: nil, at: world.clock.now)
            let claimed = try await Self.claim(world, "reused-1", #"{"purchaseToken": "\#(token)"}"#)
            #expect(
                try claimed.status == .ok && claimed.answer(StatusAnswer.self).entitled == true, "\(String(buffer: claimed.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/reused-1/status").answer(StatusAnswer.self).entitled == true)
        }
    }

    @Test(
        "erasing a UUID account the app named in capitals (sql/0073): its Play subscription, the read naming it and the chain go to the pseudonym, and no row keeps the id in any case"
    )
    func erasureOfACapitalizedUUID() async throws {
        let admin = "ada:admin:admin-key-play-erasure-02"
        try await GooglePlayWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": admin]) { world in
            let uuid = UUID().uuidString
            let (token, notification) = world.fake.buy(GooglePlayAccessTests.monthly, accountToken: uuid, at: world.clock.now)
            try await GooglePlayAccessTests.deliver(world, notification)
            try await eventually("the purchase to be applied") { world.fake.isAcknowledged(token) }
            #expect(try await world.http.getWithKey("/v1/accounts/\(uuid.lowercased())/status").answer(StatusAnswer.self).entitled == true)
            // Before it, the export holds every notification Google sent about the purchase (Article 15: what is held).
            let export = try await world.http.execute(
                uri: "/admin/accounts/\(uuid.lowercased())/export", method: .post,
                headers: [.authorization: "Bearer admin-key-play-erasure-02", .contentType: "application/json"], body: ByteBuffer(string: "{}"))
            #expect(export.status == .ok, "\(String(buffer: export.body))")
            // `holdings` is open in the contract (the rows as stored): read raw on purpose.
            let notifications = (export.json["holdings"] as? [String: Any])?["googlePlayNotifications"] as? [[String: Any]] ?? []
            let exported = notifications.compactMap { $0["message_id"] as? String }.map { "'\($0)'" }.joined(separator: ", ")
            let ofTheToken = "SELECT count(*) FROM google_notifications WHERE purchase_token = '\(token)'"
            #expect(try await world.harness.count(ofTheToken) == notifications.count, "\(notifications)")
            #expect(try await world.harness.count("\(ofTheToken) AND message_id IN (\(exported.isEmpty ? "NULL" : exported))") == notifications.count)
            #expect(!notifications.isEmpty && notifications.allSatisfy { ($0["body"] as? [String: Any])?["packageName"] != nil })
            let erased = try await world.http.execute(
                uri: "/admin/accounts/\(uuid.lowercased())/erase", method: .post,
                headers: [.authorization: "Bearer admin-key-play-erasure-02", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"confirm": "\#(uuid.lowercased())"}"#))
            #expect(erased.status == .ok, "\(String(buffer: erased.body))")
            for table in ["google_subscriptions", "google_subscription_reads"] {
                #expect(
                    try await world.harness.count("SELECT count(*) FROM \(table) t WHERE strpos(upper(t::text), '\(uuid)') > 0") == 0,
                    "\(table) keeps the id")
                #expect(try await world.harness.count("SELECT count(*) FROM \(table)") > 0)
            }
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM google_subscription_reads WHERE strpos(upper(convert_from(body, 'UTF8')), '\(uuid)') > 0") == 0)
        }
    }
}
