import Credits
import Crypto
import Foundation
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

@Suite("Configuration")
struct ConfigurationTests {
    @Test("bad configuration is one error that lists every problem")
    func everyProblemAtOnce() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(environment: [
                "DATABASE_URL": "mysql://nope",
                "STOREKEEPER_ENVIRONMENTS": "Production,Staging",
                "STOREKEEPER_ROOT_CERTIFICATES": "/nonexistent/root.cer",
                "STOREKEEPER_PORT": "99999",
                "STOREKEEPER_TRANSFER_POLICY": "steal",
            ])
        }
        let problems = try #require(error?.problems)
        #expect(problems.count == 7, "\(problems)")
        let text = error?.description ?? ""
        for needle in [
            "DATABASE_URL", "STOREKEEPER_BUNDLE_ID", "Staging", "STOREKEEPER_APP_APPLE_ID", "/nonexistent/root.cer", "STOREKEEPER_PORT",
            "STOREKEEPER_TRANSFER_POLICY",
        ] {
            #expect(text.contains(needle), "missing \(needle) in: \(text)")
        }
        #expect(!text.contains("\n"))
        // Said once, at the start (helper-143: a bad DATABASE_URL repeated it).
        #expect(text.hasPrefix("invalid configuration: ") && text.components(separatedBy: "invalid configuration").count == 2, "\(text)")
    }

    @Test("a read replica is a database URL like DATABASE_URL, named in the error when it is not one")
    func replicaURL() throws {
        let base = [
            "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        ]
        #expect(try StorekeeperConfiguration.load(environment: base).replicaURL == nil)
        #expect(try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_REPLICA_URL": " "]) { $1 }).replicaURL == nil)
        let loaded = try StorekeeperConfiguration.load(
            environment: base.merging(["STOREKEEPER_REPLICA_URL": "postgres://reader@replica.internal:6432/storekeeper?sslmode=require"]) { $1 })
        #expect(loaded.replicaURL?.host == "replica.internal" && loaded.replicaURL?.port == 6432 && loaded.replicaURL?.database == "storekeeper")
        for bad in ["mysql://replica/x", "replica.internal", "postgres://reader@replica.internal:99999/x"] {
            let error = #expect(throws: ConfigurationError.self) {
                try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_REPLICA_URL": bad]) { $1 })
            }
            let text = error?.description ?? ""
            #expect(error?.problems.count == 1 && text.contains("STOREKEEPER_REPLICA_URL") && !text.contains("DATABASE_URL"), "\(bad): \(text)")
        }
    }

    @Test("the refund policy and the offers are checked at startup: ranges, audiences, products of the catalogue")
    func refundPolicyAndOffers() throws {
        let root = AppleSamples.rootCertificate
        let base = [
            "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": root.path,
        ]
        let loaded = try StorekeeperConfiguration.load(
            environment: base.merging([
                "STOREKEEPER_REFUND_POLICY": #"{"answerAfterMinutes": 30, "consumableDeclineAbovePercent": 90}"#,
                "STOREKEEPER_OFFERS": "offers:\n  - {id: back, product: pro.monthly, audience: lapsed}",
            ]) { $1 })
        #expect(loaded.refundPolicy.answerAfter == 1800 && loaded.refundPolicy.consumableDeclineAbovePercent == 90)
        #expect(loaded.refundPolicy.subscriptionDeclineAbovePercent == 50)
        #expect(loaded.offers.map(\.id) == ["back"] && loaded.offers.first?.oncePerAccount == true)
        let error = #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(
                environment: base.merging([
                    "STOREKEEPER_REFUND_POLICY": #"{"answerAfterMinutes": 720, "subscriptionDeclineAbovePercent": 150}"#,
                    "STOREKEEPER_OFFERS":
                        #"{"offers": [{"id": "a", "product": "credits.100", "audience": "everyone"}, {"id": "", "product": "pro.monthly", "audience": "active"}]}"#,
                ]) { $1 })
        }
        let problems = try #require(error?.problems)
        #expect(problems.count == 5, "\(problems)")
        #expect(problems.contains { $0.contains("answerAfterMinutes") } && problems.contains { $0.contains("subscriptionDeclineAbovePercent") })
        #expect(problems.contains { $0.contains("credits.100") } && problems.contains { $0.contains("audience") })
        #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_OFFERS": "/nonexistent/offers.yml"]) { $1 })
        }
        // Signed payloads: 13 months unless told, `forever`, or days; nothing else.
        #expect(loaded.signedRetention == TimeInterval(396 * 86_400))
        let forever = try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_SIGNED_RETENTION_DAYS": "Forever"]) { $1 })
        #expect(forever.signedRetention == nil)
        let month = try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_SIGNED_RETENTION_DAYS": "31"]) { $1 })
        #expect(month.signedRetention == TimeInterval(31 * 86_400))
        for bad in ["0", "-3", "13 months", "99999999999999999999"] {
            #expect(throws: ConfigurationError.self) {
                try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_SIGNED_RETENTION_DAYS": bad]) { $1 })
            }
        }
        // Usage answers and ended holds: 30 days unless told, `forever`, or days — at least 2, longer than a reversal's
        // and a hold's day.
        #expect(loaded.idempotencyWindow == TimeInterval(30 * 86_400))
        let keptForever = try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS": "forever"]) { $1 })
        #expect(keptForever.idempotencyWindow == nil)
        let week = try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS": "7"]) { $1 })
        #expect(week.idempotencyWindow == TimeInterval(7 * 86_400))
        for bad in ["1", "0", "-1", "30d", "never"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS": bad]) { $1 })
            }
        }
    }

    @Test("STOREKEEPER_CURRENCY_RATES: rates kept as written; the reporting currency, absurd rates and odd codes refused in one printable line")
    func currencyRates() throws {
        let base = [
            "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        ]
        let loaded = try StorekeeperConfiguration.load(
            environment: base.merging([
                "STOREKEEPER_CURRENCY_RATES": "reporting: USD\nrates: {EUR: 1.08, JPY: 0.0067, USD: 1}"
            ]) { $1 })
        #expect(loaded.currencyRates?.rates["EUR"] == Decimal(string: "1.08"))
        #expect(loaded.currencyRates?.convert(1_500_000, from: "JPY") == 10_050)
        let refused: [(String, String)] = [
            ("reporting: USD\nrates: {USD: 1.1}", "rates.USD is the reporting currency"),
            ("reporting: USD\nrates: {EUR: 1e-300}", "rates.EUR must be a number from 0.000001 to 1000000"),
            ("reporting: USD\nrates: {EUR: 0}", "rates.EUR must be a number"),
            ("{\"reporting\": \"USD\", \"rates\": {\"E\\u0000R\": 1.0}}", "rates.E?R is not an ISO 4217 code"),
        ]
        for (yaml, message) in refused {
            let error = #expect(throws: ConfigurationError.self, "\(yaml)") {
                try StorekeeperConfiguration.load(environment: base.merging(["STOREKEEPER_CURRENCY_RATES": yaml]) { $1 })
            }
            let text = error?.description ?? ""
            #expect(text.contains(message), "\(yaml): \(text)")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 }, "\(yaml): \(text)")
        }
    }

    @Test("Google Play's three settings come together and each is checked; with all three the intake is configured")
    func googlePlaySettings() throws {
        let base = [
            "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        ]
        let complete = base.merging([
            "STOREKEEPER_GOOGLE_PACKAGE_NAME": "com.example.app", "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": "https://example.com/notifications/google",
            "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": "push@example.iam.gserviceaccount.com",
        ]) { $1 }
        let configured = try StorekeeperConfiguration.load(environment: complete, requiresDatabase: false)
        #expect(configured.googlePlay?.packageName == "com.example.app")
        #expect(configured.googlePlay?.certificatesURL == "https://www.googleapis.com/oauth2/v3/certs")
        #expect(try StorekeeperConfiguration.load(environment: base, requiresDatabase: false).googlePlay == nil)
        let cases: [(String, [String: String], String)] = [
            ("the package alone", ["STOREKEEPER_GOOGLE_PACKAGE_NAME": "com.example.app"], "set together"),
            ("not a package", complete.merging(["STOREKEEPER_GOOGLE_PACKAGE_NAME": "example app"]) { $1 }, "STOREKEEPER_GOOGLE_PACKAGE_NAME"),
            ("not an email", complete.merging(["STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": "push"]) { $1 }, "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT"),
            ("not a URL", complete.merging(["STOREKEEPER_GOOGLE_CERTS_URL": "ftp://x"]) { $1 }, "STOREKEEPER_GOOGLE_CERTS_URL"),
            (
                "no key file", complete.merging(["STOREKEEPER_GOOGLE_SERVICE_ACCOUNT": "/nonexistent/key.json"]) { $1 },
                "cannot read the service-account key file"
            ),
            ("not a key file", complete.merging(["STOREKEEPER_GOOGLE_SERVICE_ACCOUNT": AppleSamples.rootCertificate.path]) { $1 }, "not JSON"),
            ("API URL", complete.merging(["STOREKEEPER_GOOGLE_PLAY_API_URL": "nope"]) { $1 }, "STOREKEEPER_GOOGLE_PLAY_API_URL"),
            ("pace", complete.merging(["STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE": "0"]) { $1 }, "STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE"),
        ]
        for (label, environment, needle) in cases {
            let error = #expect(throws: ConfigurationError.self, "\(label)") {
                try StorekeeperConfiguration.load(environment: base.merging(environment) { $1 }, requiresDatabase: false)
            }
            #expect(error?.description.contains(needle) == true, "\(label): \(error?.description ?? "")")
        }
    }

    @Test("DATABASE_URL is optional only where a private cluster is started")
    func databaseOptionalForDev() throws {
        let root = AppleSamples.rootCertificate
        let environment = [
            "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
            "STOREKEEPER_ROOT_CERTIFICATES": root.path,
        ]
        let configuration = try StorekeeperConfiguration.load(environment: environment, requiresDatabase: false)
        #expect(configuration.databaseURL == nil)
        #expect(configuration.port == 8080)
        #expect(throws: ConfigurationError.self) { try StorekeeperConfiguration.load(environment: environment) }
    }

    @Test("the example catalogue loads; a broken one adds every problem, each naming the file and place")
    func catalogue() throws {
        let example = try TierCatalogue.load(path: "config/tiers.yml").get()
        #expect(example.meters.map(\.id) == ["ai_requests", "exports"])
        #expect(example.tiers.count >= 3)
        #expect(
            example.tiers.filter { !$0.grantableOnly }.allSatisfy { tier in
                tier.products.contains { $0.period == "P1M" } && tier.products.contains { $0.period == "P1Y" }
            })
        // The example shows every kind of product and source: a lifetime unlock, a pass, a tier only grants entitle,
        // typed features — and nothing in it is written the old way.
        #expect(example.tiers.contains { $0.products.contains { $0.type == .lifetime } })
        #expect(example.tiers.contains { $0.products.contains { $0.type == .nonRenewing } })
        #expect(example.tiers.contains { $0.grantableOnly && $0.products.isEmpty })
        #expect(!example.featureDefinitions.isEmpty && example.warnings().isEmpty)
        #expect(!example.topUps.isEmpty)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tiers-\(UUID().uuidString).yml")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        meters: [{ id: ai, display_name: AI }]
        free: { display_name: Free, allowances: { ai: { per_day: 5, per_cycle: 3 } } }
        tiers:
          - { id: pro, level: 1, display_name: Pro, products: [{ id: p, period: P1M, price: -1, currency: USD }], allowances: { lookups: { per_cycle: 5 } } }
        top_ups: []
        """.write(to: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(environment: [
                "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "b", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
                "STOREKEEPER_ROOT_CERTIFICATES": "/nonexistent/root.cer", "STOREKEEPER_TIERS": file.path,
            ])
        }
        let problems = try #require(error?.problems)
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.filter { $0.hasPrefix("STOREKEEPER_TIERS (\(file.path)): ") }.count == 3)

        try "meters: [{ id: ai }]".write(to: file, atomically: true, encoding: .utf8)
        if case .failure(let decoding) = TierCatalogue.load(path: file.path) {
            #expect(decoding.problems.count == 1)
            #expect(
                decoding.problems[0].contains("display_name is missing") || decoding.problems[0].contains("free is missing"), "\(decoding.problems)")
        } else {
            Issue.record("an incomplete catalogue loaded")
        }
    }
}

@Suite("Configuration: STOREKEEPER_RETENTION")
struct RetentionConfigurationTests {
    static let base = [
        "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
        "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        "STOREKEEPER_OFFERS": "config/offers.yml.example",
    ]

    static func problems(_ retention: String, extra: [String: String] = [:]) throws -> [String] {
        let error = #expect(throws: ConfigurationError.self) {
            try StorekeeperConfiguration.load(environment: base.merging(extra.merging(["STOREKEEPER_RETENTION": retention]) { $1 }) { $1 })
        }
        return error?.problems ?? []
    }

    @Test("the shipped example loads with the In-App Purchase key, and names the key it lacks without it")
    func example() throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8")
        try P256.Signing.PrivateKey().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: key) }
        let assa = ["STOREKEEPER_ASSA_ISSUER_ID": "issuer", "STOREKEEPER_ASSA_KEY_ID": "KEY", "STOREKEEPER_ASSA_PRIVATE_KEY": key.path]
        let loaded = try StorekeeperConfiguration.load(
            environment: Self.base.merging(assa.merging(["STOREKEEPER_RETENTION": "config/retention.yml"]) { $1 }) { $1 })
        let policy = try #require(loaded.retention)
        #expect(policy.rules.map(\.name) == ["idle_offer", "never_started", "heavy_monthly_to_annual"])
        #expect(policy.deadline == .milliseconds(300) && policy.fallback == .message(messageIdentifier: "6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10"))
        let problems = try Self.problems("config/retention.yml")
        #expect(problems.count == 1 && problems[0].contains("In-App Purchase key"), "\(problems)")
    }

    @Test("every mistake is named: unknown keys, answers not exactly one, ids, products, offers, ranges, names")
    func mistakes() throws {
        let message = "6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10"
        // An unknown key stops the file before it is read further: one problem, with the nearest known key.
        let problems = try Self.problems(
            """
            rules:
              - name: a
                when: { months_subscribd_at_least: 3 }
                answer: { message: not-a-uuid }
            """)
        #expect(
            problems.count == 1 && problems[0].contains("months_subscribd_at_least is not a known key; did you mean months_subscribed_at_least?"),
            "\(problems)")
        let rest = try Self.problems(
            """
            deadline_ms: 900
            default: { promotional_offer: { offer: pro_stay_20, message: \(message) } }
            rules:
              - name: a
                when: { spent_share_below: 20, tiers: [gold], top_ups_below: -1 }
                answer: { message: not-a-uuid }
              - name: a
                answer: { message: \(message), alternate_product: { product: pro.annual, message: \(message) } }
              - name: default
                answer: { alternate_product: { product: credits.100, message: \(message), billing_plan: YEARLY } }
              - name: "x y"
                answer: { promotional_offer: { offer: nope, message: \(message) } }
            """)
        let all = rest.joined(separator: "\n")
        for needle in [
            "deadline_ms must be 20–400", "default must be a message or an alternate_product", "a spent share is a fraction 0–1",
            "\"gold\" is not a tier", "counts and days are 0 or more", "rules.0.answer.message must be the UUID",
            "rules.1.name \"a\" is listed twice", "rules.1.answer must be exactly one of", "rules.2.name \"default\" names the answer",
            "\"credits.100\" is not an App Store subscription product", "billing_plan must be BILLED_UPFRONT or MONTHLY", "rules.3.name must be 1–64",
            "\"nope\" is not an offer of STOREKEEPER_OFFERS", "needs the In-App Purchase key",
        ] {
            #expect(all.contains(needle), "missing \(needle) in: \(all)")
        }
        #expect(rest.allSatisfy { !$0.contains("\n") && $0.hasPrefix("STOREKEEPER_RETENTION") })
    }

    @Test("rules that could never hold, and products Apple cannot name (Stripe, Google Play), are refused")
    func impossible() throws {
        let message = "6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10"
        let problems = try Self.problems(
            """
            rules:
              - name: never
                when: { spent_share_at_least: 0.8, spent_share_below: 0.2, never_spent: true, days_since_last_spend_at_least: 3, products: [pro/monthly] }
                answer: { alternate_product: { product: price_pro_annual, message: \(message) } }
            """)
        let all = problems.joined(separator: "\n")
        for needle in [
            "spent_share_at_least must be below spent_share_below", "never_spent: true with a days_since_last_spend bound never holds",
            "\"pro/monthly\" is not an App Store subscription product", "\"price_pro_annual\" is not an App Store subscription product",
        ] {
            #expect(all.contains(needle), "missing \(needle) in: \(all)")
        }
        #expect(problems.count == 4, "\(problems)")
    }
}
