import AppStoreModels
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

/// The operator's ways to grant — CLI and dashboard — and what grants do over time: their monthly allowance, their end
/// by the clock; and the overlap event; and the paywall's view of typed features.
@Suite("Entitlement sources: operators, time, overlaps and the paywall, on real PostgreSQL")
struct EntitlementSourcesOperatorTests {
    static let adminKey = EntitlementSourcesTests.adminKey

    func admin(_ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
        try await EntitlementSourcesTests().admin(client, method, uri, body)
    }

    @Test("a pro grant gives 1,000 to spend; one ending in three seconds ends by the clock and its grant.ended comes from the job")
    func grantCreditsAndEnd() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            try await harness.withHTTP { client in
                let account = UUID().uuidString.lowercased()
                let endsAt = Date().addingTimeInterval(3).formatted(.iso8601)
                let created = try await admin(
                    client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "endsAt": "\#(endsAt)", "reason": "support"}"#)
                #expect(created.status == .created, "\(String(buffer: created.body))")
                let spend = try await client.execute(
                    uri: "/v1/accounts/\(account)/usage", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "k1"}"#))
                #expect(spend.status == .ok)
                #expect(try spend.answer(UsageAnswer.self).remaining == 999, "\(String(buffer: spend.body))")
                #expect(try await harness.count("SELECT count(*) FROM credit_buckets WHERE kind = 'entitlement'") == 1)
                // Access ends by the clock alone; the job that runs then says so.
                try await eventually(timeout: .seconds(20), "the grant to end by the clock") {
                    try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self).tier == "free"
                }
                try await eventually(timeout: .seconds(20), "grant.ended from the source-change job") {
                    try await harness.count("SELECT count(*) FROM events WHERE type = 'grant.ended'") == 1
                }
                let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                let credits = try #require(status.credits["ai_requests"])
                #expect(credits.cycle == nil)
            }
        }
    }

    @Test("storekeeper grants add, list and end; bad input is one line and a non-zero exit")
    func grantsCommand() async throws {
        try await StorekeeperHarness.run { harness in
            let environment = ["DATABASE_URL": harness.databaseURL.urlString]
            func storekeeper(_ arguments: String...) async throws -> (Int32, String) {
                try await TestProcess.run("storekeeper", arguments, environment: environment)
            }
            let account = "support-case-4711"
            let (added, addOutput) = try await storekeeper("grants", "add", account, "--tier", "max", "--duration", "P1M", "--reason", "outage")
            #expect(added == 0, "\(addOutput)")
            #expect(addOutput.contains("granted max to \(account)"))
            let (listed, list) = try await storekeeper("grants", "list", account, "--json")
            #expect(listed == 0)
            // The command's output, not an HTTP answer: the published contract does not describe it, so it is read raw.
            let grants = try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [[String: Any]]
            let grantId = try #require(grants?.first?["id"] as? String)
            #expect(grants?.first?["createdBy"] as? String == "cli")
            #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'grant.started'") == 1)
            // `accounts show` lists the account's grants beside its subscriptions.
            let (shown, shownText) = try await storekeeper("accounts", "show", account)
            #expect(
                shown == 0 && shownText.contains("grants and one-time purchases, newest first (1)")
                    && shownText.contains("grant  \(grantId)  max  active"), "\(shownText)")
            // An id nothing names (a typo, most often): one line and exit 1, in JSON too, not the free tier's page.
            for format in [[], ["--json"]] {
                let (unknown, unknownText) = try await TestProcess.run(
                    "storekeeper", ["accounts", "show", "never-seen-\(account)"] + format, environment: environment)
                #expect(
                    unknown == 1
                        && unknownText.trimmingCharacters(in: .whitespacesAndNewlines)
                            == "storekeeper: nothing is stored for account never-seen-\(account): is the id right? (the API answers any id with the free tier's status)",
                    "\(unknownText)")
            }
            let (ended, endOutput) = try await storekeeper("grants", "end", grantId)
            #expect(ended == 0 && endOutput.contains("ended grant \(grantId)"))
            let (again, againOutput) = try await storekeeper("grants", "end", grantId)
            #expect(again == 0 && againOutput.contains("had ended already"))

            for (arguments, message) in [
                (["grants", "add", account, "--tier", "gold", "--lifetime", "--reason", "x"], "tier gold is not in the catalogue"),
                (["grants", "add", account, "--tier", "pro", "--reason", "x"], "give exactly one of --duration, --ends-at or --lifetime"),
                (["grants", "add", account, "--tier", "pro", "--duration", "soon", "--reason", "x"], "duration soon is not an ISO 8601 duration"),
                (["grants", "add", account, "--tier", "pro", "--ends-at", "2001-01-01T00:00:00Z", "--reason", "x"], "not in the future"),
                (["grants", "end", "nope"], "the grant id must be a UUID"),
                (["grants", "end", UUID().uuidString], "no grant"),
            ] {
                let (status, output) = try await TestProcess.run("storekeeper", arguments, environment: environment)
                let lines = output.split(separator: "\n")
                #expect(status == 1 && lines.count == 1 && output.contains(message), "\(arguments): \(status) \(output)")
            }
        }
    }

    @Test("the dashboard's account page lists entitlements and grants; its forms grant and end, same-site only")
    func dashboardGrants() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            try await harness.withHTTP { client in
                let basic = "Basic " + Data("admin:\(Self.adminKey)".utf8).base64EncodedString()
                let account = "dash-\(UUID().uuidString.prefix(8))"
                let form = "tier=pro&duration=P7D&reason=make%2Bgood+for+outage"
                let crossSite = try await client.execute(
                    uri: "/admin/accounts/\(account)/grant", method: .post,
                    headers: [.authorization: basic, .contentType: "application/x-www-form-urlencoded", .init("Sec-Fetch-Site")!: "cross-site"],
                    body: ByteBuffer(string: form))
                #expect(crossSite.status == .forbidden)
                let granted = try await client.execute(
                    uri: "/admin/accounts/\(account)/grant", method: .post,
                    headers: [.authorization: basic, .contentType: "application/x-www-form-urlencoded", .init("Sec-Fetch-Site")!: "same-origin"],
                    body: ByteBuffer(string: form))
                #expect(granted.status == .seeOther)
                #expect(granted.headers[.location] == "/admin?account=\(account)")
                let reason = try await harness.client.query("SELECT reason FROM entitlement_sources", logger: TestDatabase.logger)
                for try await text in reason.decode(String.self) { #expect(text == "make+good for outage") }
                let page = String(
                    buffer: try await client.execute(uri: "/admin?account=\(account)", method: .get, headers: [.authorization: basic]).body)
                #expect(page.contains("<h2>Entitlements</h2>") && page.contains("<h2>Grants</h2>") && page.contains("make+good for outage"))
                let grantId = try #require(
                    page.range(of: #"/admin/grants/([0-9a-f-]{36})/end"#, options: .regularExpression).map {
                        String(page[$0].dropFirst("/admin/grants/".count).prefix(36))
                    })
                let ended = try await client.execute(
                    uri: "/admin/grants/\(grantId)/end", method: .post, headers: [.authorization: basic, .init("Sec-Fetch-Site")!: "same-origin"])
                #expect(ended.status == .seeOther)
                #expect(try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self).entitled == false)
                // A refused form comes back to the page with why; a form sent twice (one rendering, one key) grants once.
                func send(_ form: String) async throws -> TestResponse {
                    try await client.execute(
                        uri: "/admin/accounts/\(account)/grant", method: .post,
                        headers: [.authorization: basic, .contentType: "application/x-www-form-urlencoded", .init("Sec-Fetch-Site")!: "same-origin"],
                        body: ByteBuffer(string: form))
                }
                for form in ["tier=gold&lifetime=true&reason=x", "tier=pro&reason=x"] {
                    let refused = try await send(form)
                    #expect(refused.status == .seeOther && refused.headers[.location]?.contains("&grantError=") == true, "\(form)")
                    let shown = String(
                        buffer: try await client.execute(uri: refused.headers[.location]!, method: .get, headers: [.authorization: basic]).body)
                    #expect(shown.contains("Not granted: "), "\(form)")
                }
                let key = UUID().uuidString
                #expect(try await send("tier=max&lifetime=true&reason=twice&request=\(key)").status == .seeOther)
                #expect(try await send("tier=max&lifetime=true&reason=twice&request=\(key)").status == .seeOther)
                #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE reason = 'twice'") == 1)
            }
        }
    }

    @Test("two auto-renewing subscriptions of one group on one account send account.overlapping_subscriptions once")
    func overlappingSubscriptions() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var first = LifecycleFlow(harness: harness, client: client, account: account)
                first.subscription.productId = "pro.monthly"
                try await first.send(.subscribe)
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'account.overlapping_subscriptions'") == 0)
                var second = LifecycleFlow(harness: harness, client: client, account: account)
                second.subscription.productId = "basic.monthly"
                try await second.send(.subscribe)
                try await second.send(.renew)
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'account.overlapping_subscriptions'") == 1)
                let status = try await first.statusAnswer()
                #expect(status.entitlements.count == 2)
                #expect(status.tier == "pro")
            }
        }
    }

    @Test("GET /v1/tiers serves feature definitions, highlights and typed values, product types, and hides grantable tiers")
    func paywall() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let tiers = try await client.execute(uri: "/v1/tiers", method: .get).answer(TiersAnswer.self)
                #expect(tiers.upgradeCredits == "prorate")
                let definitions = tiers.featureDefinitions
                #expect(definitions.first { $0.id == "model" }?.levels == ["standard", "advanced"])
                let paid = tiers.tiers
                #expect(!paid.contains { $0.id == "admin" })
                let pro = try #require(paid.first { $0.id == "pro" })
                #expect(pro.featureValues == ["model": .text("advanced"), "images": .boolean(true), "history_days": .number(365)])
                #expect(pro.highlights == pro.features)
                let basic = try #require(paid.first { $0.id == "basic" })
                let types = basic.products.map(\.type)
                #expect(
                    types == [
                        "auto_renewable", "auto_renewable", "lifetime", "non_renewing", "auto_renewable", "lifetime", "auto_renewable", "lifetime",
                        "non_renewing",
                    ])
                let stores = basic.products.map(\.store)
                #expect(
                    stores == ["app_store", "app_store", "app_store", "app_store", "stripe", "stripe", "google_play", "google_play", "google_play"])
                #expect(
                    tiers.free.featureValues == ["model": .text("standard"), "images": .boolean(false), "history_days": .number(7)])
            }
        }
    }
}
