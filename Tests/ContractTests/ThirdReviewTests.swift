import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import StorekeeperRuntime
import StripeStore
import TestSupport
import Testing

@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The third review's rows 6–8 and its design note on `grantable_only` tiers (issue 51), each as it was attacked:
/// `dev` with named operator keys, a stale or early `Stripe-Signature`, a crafted dashboard link, support granting
/// the internal unlimited tier.
@Suite("Third review")
struct ThirdReviewTests {
    static let viewer = "third-review-viewer-key-0001"
    static let support = "third-review-support-key-0001"
    static let admin = "third-review-admin-key-0001"
    static let operators = ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:\(viewer),sam:support:\(support),ada:admin:\(admin)"]

    // MARK: Row 6

    @Test("row 6: `dev` starts with named operator keys; the user's viewer is a viewer, dev's own key an admin named dev")
    func devNamedKeys() async throws {
        try await TestDatabase.withMigratedDatabase { url in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sk-third-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let port = try PrivateCluster.freePort()
            let alice = "some-long-viewer-key-000001"
            let environment = [
                "DATABASE_URL": url.urlString, "STOREKEEPER_TIERS": AppleSamples.repository.appendingPathComponent("config/tiers.yml").path,
                "STOREKEEPER_SQL_DIR": AppleSamples.repository.appendingPathComponent("sql").path,
                "STOREKEEPER_ADMIN_KEYS": "alice:viewer:\(alice)",
            ]
            let dev = try TestProcess("storekeeper", arguments: ["dev", "--port", String(port)], environment: environment, directory: folder)
            defer { dev.signal(SIGTERM) }
            let settings = DevEnvironment(directory: folder.appendingPathComponent(".storekeeper"))
            try await eventually(timeout: .seconds(60), "dev to start or stop") {
                !dev.isRunning || (dev.text.contains("Storekeeper is running") && settings.settings()["STOREKEEPER_API_KEY"] != nil)
            }
            try #require(dev.isRunning, "dev stopped: \(dev.text)")
            // What the screenshot scripts read: dev.env's key still opens the dashboard, as an admin.
            let devKey = try #require(settings.settings()["STOREKEEPER_API_KEY"])
            func signedIn(_ key: String) async throws -> String {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/admin")!)
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                let page = String(decoding: try await URLSession.shared.data(for: request).0, as: UTF8.self)
                return page.range(of: #"signed in as [^<]*"#, options: .regularExpression).map { String(page[$0]) } ?? page.prefix(200).description
            }
            #expect(try await signedIn(alice) == "signed in as alice (viewer)")
            #expect(try await signedIn(devKey) == "signed in as dev (admin)")
        }
    }

    @Test("row 6: the keys dev configures load beside named entries, beside bare keys, and alone")
    func devAdminKeys() throws {
        let devKey = "sk_dev_" + String(repeating: "ab", count: 32)
        func operators(_ user: String?) throws -> [String: String] {
            let entries = DevEnvironment.adminKeys(devKey: devKey, adding: user)
            let configuration = try StorekeeperConfiguration.load(
                environment: [
                    "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
                    "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.repository.appendingPathComponent("config/AppleRootCA-G3.cer").path,
                    "STOREKEEPER_TIERS": AppleSamples.repository.appendingPathComponent("config/tiers.yml").path, "STOREKEEPER_ADMIN_KEYS": entries,
                ], requiresDatabase: false)
            return Dictionary(uniqueKeysWithValues: configuration.adminKeys.map { ($0.key, "\($0.name):\($0.role.rawValue)") })
        }
        #expect(try operators("alice:viewer:some-long-viewer-key-000001") == [devKey: "dev:admin", "some-long-viewer-key-000001": "alice:viewer"])
        #expect(try operators(nil) == [devKey: "dev:admin"])
        #expect(try operators("")[devKey] == "dev:admin")
        // A list of bare keys, as earlier versions took them, keeps working: dev's key joins it bare.
        #expect(try operators("an-old-bare-admin-key-0000001")["an-old-bare-admin-key-0000001"]?.hasSuffix(":admin") == true)
    }

    // MARK: Row 7

    @Test("row 7: a Stripe-Signature 301 s old is refused as signed ago, one 301 s ahead as in the future")
    func stripeToleranceMessages() async throws {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let secret = "whsec_third_review_secret"
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_STRIPE_WEBHOOK_SECRETS": secret], clock: { now }) { harness in
            try await harness.withHTTP { client in
                let body = StripeWorld.event("evt_third_review_1")
                func message(signedAt offset: TimeInterval) async throws -> String {
                    let header = StripeSignature(secrets: [secret]).header(body: body, timestamp: Int64(now.timeIntervalSince1970 + offset))
                    let answer = try await client.execute(
                        uri: "/stripe/webhooks", method: .post,
                        headers: [.contentType: "application/json", HTTPField.Name("Stripe-Signature")!: header], body: ByteBuffer(bytes: body))
                    let refusal = try answer.answer(ErrorAnswer.self)
                    #expect(answer.status == .unauthorized && refusal.error == "verification_failed")
                    return refusal.message
                }
                let (old, early) = (try await message(signedAt: -301), try await message(signedAt: 301))
                #expect(old == "signed 301 s ago, beyond the tolerance of 300 s")
                #expect(early == "signed 301 s in the future, beyond the tolerance of 300 s")
            }
        }
    }

    // MARK: Row 8

    @Test("row 8: a notice is shown only as the server signed it for the operator who follows it, and without bidi controls")
    func signedNotices() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.operators) { harness in
            try await harness.withHTTP { client in
                func page(_ uri: String, key: String) async throws -> String {
                    let answer = try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(key)"])
                    #expect(answer.status == .ok, "\(uri)")
                    return String(buffer: answer.body)
                }
                func refusedGrant(_ form: String) async throws -> String {
                    let answer = try await client.execute(
                        uri: "/admin/accounts/noticed/grant", method: .post,
                        headers: [.authorization: "Bearer \(Self.support)", .contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: form + "&request=\(UUID().uuidString)"))
                    #expect(answer.status == .seeOther)
                    return try #require(answer.headers[.location])
                }
                // Crafted links: unsigned, or with a made-up signature, under every notice's name.
                for name in ["erased", "grantError", "creditError", "appStore", "extendAll"] {
                    for signature in ["", "&\(name)Signature=" + String(repeating: "0", count: 64), "&\(name)Signature=zz"] {
                        let uri = "/admin?account=noticed&\(name)=Erased:%20done\(signature)"
                        let shown = try await page(uri, key: Self.admin)
                        #expect(shown.contains("signed in as ada") && !shown.contains("Erased: done"), "\(uri)")
                    }
                }
                // The server's own redirect: a support key's grant for life is refused, and the page says why — to sam.
                let said = "Not granted: a grant for life or for more than 366 days needs the admin role"
                let location = try await refusedGrant("tier=pro&lifetime=true&reason=founder")
                #expect(try await page(location, key: Self.support).contains(said), "\(location)")
                // The same link followed with another operator's key: nothing.
                for key in [Self.admin, Self.viewer] {
                    let other = try await page(location, key: key)
                    #expect(!other.contains("Not granted"), "\(key)")
                }
                // Its text changed, its signature kept: nothing.
                let changed = location.replacingOccurrences(of: "admin%20role", with: "admin%20rol")
                let forged = try await page(changed, key: Self.support)
                #expect(changed != location && !forged.contains("Not granted"))
                // The other forms' redirects are signed as well: the erase form unconfirmed, a mass extension's dry run.
                for (uri, form, notice) in [
                    ("/admin/accounts/noticed/erase", "confirm=someone-else", "Not erased: type the account id exactly to confirm"),
                    (
                        "/admin/extend-all", "productId=pro.monthly&days=3&reason=service_issue_or_outage&dryRun=true&request=\(UUID().uuidString)",
                        "Dry run: 0 paid"
                    ),
                ] {
                    let answer = try await client.execute(
                        uri: uri, method: .post,
                        headers: [.authorization: "Bearer \(Self.admin)", .contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: form))
                    let back = try #require(answer.headers[.location], "\(uri): \(answer.status)")
                    #expect(try await page(back, key: Self.admin).contains(notice), "\(back)")
                }
                // A notice the server signed that carries a right-to-left override: shown without it.
                let reversed = try await refusedGrant("tier=%E2%80%AEorp&duration=P30D&reason=founder")
                let shown = try await page(reversed, key: Self.support)
                #expect(shown.contains("Not granted: tier orp is not in the catalogue"), "\(reversed)")
                #expect(!shown.unicodeScalars.contains { (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) })
            }
        }
    }

    // MARK: Design note: grantable_only tiers

    @Test("support cannot grant a grantable_only tier (403, nothing granted) by the API or the form; admin can; the form defaults to a sold tier")
    func grantableOnlyNeedsAdmin() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.operators) { harness in
            try await harness.withHTTP { client in
                func grant(_ key: String, tier: String) async throws -> HTTPResponse.Status {
                    try await client.execute(
                        uri: "/admin/accounts/internal-team/grants", method: .post,
                        headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"tier": "\#(tier)", "duration": "P30D", "reason": "team account"}"#)
                    ).status
                }
                func granted() async throws -> Int {
                    try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = 'internal-team'")
                }
                #expect(try await grant(Self.support, tier: "admin") == .forbidden)
                #expect(try await granted() == 0)
                let form = try await client.execute(
                    uri: "/admin/accounts/internal-team/grant", method: .post,
                    headers: [.authorization: "Bearer \(Self.support)", .contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(string: "tier=admin&duration=P30D&reason=team&request=\(UUID().uuidString)"))
                #expect(form.status == .seeOther && form.headers[.location]?.contains("grantError=") == true)
                #expect(try await granted() == 0)
                #expect(try await grant(Self.support, tier: "pro") == .created)
                #expect(try await grant(Self.admin, tier: "admin") == .created)
                #expect(try await granted() == 2)

                /// The grant form's tier values, and the one a browser submits untouched (the selected one, else the first).
                func tierChoices(_ key: String) async throws -> (values: [String], chosen: String?) {
                    let page = String(
                        buffer: try await client.execute(
                            uri: "/admin?account=internal-team", method: .get, headers: [.authorization: "Bearer \(key)"]
                        ).body)
                    let select = try #require(
                        page.range(of: #"<select name="tier">.*?</select>"#, options: .regularExpression).map { String(page[$0]) })
                    let options = select.components(separatedBy: "<option").dropFirst()
                    let parsed = options.map { option -> (String, Bool) in
                        let value =
                            option.range(of: #"value="[^"]*""#, options: .regularExpression).map { String(option[$0].dropFirst(7).dropLast()) } ?? ""
                        return (value, option.contains(" selected"))
                    }
                    return (parsed.map(\.0), parsed.first { $0.1 }?.0 ?? parsed.first?.0)
                }
                let forAdmin = try await tierChoices(Self.admin)
                #expect(forAdmin.values.contains("admin") && forAdmin.chosen != nil && forAdmin.chosen != "admin", "\(forAdmin)")
                let forSupport = try await tierChoices(Self.support)
                #expect(!forSupport.values.contains("admin") && forSupport.chosen == forAdmin.chosen, "\(forSupport)")
            }
        }
    }
}
