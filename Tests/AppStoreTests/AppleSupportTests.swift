import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

/// What support asks Apple — Extend a Subscription Renewal Date, Look Up Order ID, Get Refund History, Extend
/// Subscription Renewal Dates for All Active Subscribers and its status — against the fake Apple, which plays each
/// endpoint as Apple's reference documents it (limits, eligibility, error codes). Expectations are Apple's documented
/// behaviour: an extension moves the expiry by its days, at most twice a year, never in a free trial.
@Suite("Apple support: renewal extensions, order ids, refund history")
struct AppleSupportTests {
    static let keys = "vera:viewer:viewer-key-apple-0001,sam:support:support-key-apple-0001,ada:admin:admin-key-apple-0001"
    static let day: Int64 = 86_400_000

    static func json(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)", .contentType: "application/json"] }
    static let viewer = json("viewer-key-apple-0001")
    static let support = json("support-key-apple-0001")
    static let admin = json("admin-key-apple-0001")
    /// A server that takes Production notifications too: Look Up Order ID answers only there.
    static let production = [
        "STOREKEEPER_ADMIN_KEYS": keys, "STOREKEEPER_ENVIRONMENTS": "Sandbox,Production", "STOREKEEPER_APP_APPLE_ID": "1234567890",
    ]

    /// Subscribes `flow` through a signed notification and tells the fake Apple about the same subscription.
    static func subscribe(_ flow: inout LifecycleFlow, apple: FakeApple, trial: Bool = false, storefront: String = "USA") async throws
        -> TransactionPayload
    {
        let event = try await flow.send(.subscribe) { event in
            event.transaction?.storefront = storefront
            if trial {
                event.transaction?.offerType = 1
                event.transaction?.offerDiscountType = "FREE_TRIAL"
                event.transaction?.price = 0
            }
        }
        let transaction = try #require(event.transaction)
        apple.server.state.withLock {
            $0.subscriptions[transaction.originalTransactionId] = .init(status: 1, transaction: transaction, renewalInfo: event.renewalInfo)
        }
        return transaction
    }

    @Test(
        "one subscription extended through Apple: Apple's answer, the same request identifier asks once, Apple's limits refused with its codes, RENEWAL_EXTENDED moves the expiry"
    )
    func extendOne() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let bought = try await Self.subscribe(&flow, apple: apple)
                    let expires = try #require(bought.expiresDate)
                    func extend(_ body: String, _ headers: HTTPFields = Self.support) async throws -> TestResponse {
                        try await client.execute(
                            uri: "/admin/accounts/\(id)/extensions", method: .post, headers: headers, body: ByteBuffer(string: body))
                    }
                    func puts() -> Int { apple.server.requests.filter { $0.hasPrefix("PUT /inApps/v1/subscriptions/extend/") }.count }

                    #expect(try await extend(#"{"days": 7, "reason": "service_issue_or_outage"}"#, Self.viewer).status == .forbidden)
                    let first = try await extend(#"{"days": 7, "reason": "service_issue_or_outage", "requestIdentifier": "outage-1"}"#)
                    #expect(first.status == .ok, "\(String(buffer: first.body))")
                    #expect(try first.answer(ExtensionRequestAnswer.self).success == true)
                    #expect(try first.answer(ExtensionRequestAnswer.self).subscription == flow.originalTransactionId)
                    // Apple's effectiveDate: the old expiry plus seven days.
                    #expect(
                        try first.answer(ExtensionRequestAnswer.self).effectiveDate
                            == Date(timeIntervalSince1970: Double(expires + 7 * Self.day) / 1000).formatted(.iso8601))
                    #expect(
                        try first.answer(ExtensionRequestAnswer.self).reasonCode == 3
                            && first.answer(ExtensionRequestAnswer.self).requestedBy == "sam")
                    let again = try await extend(#"{"days": 7, "reason": "service_issue_or_outage", "requestIdentifier": "outage-1"}"#)
                    #expect(
                        try again.status == .ok
                            && again.answer(ExtensionRequestAnswer.self).effectiveDate == first.answer(ExtensionRequestAnswer.self).effectiveDate)
                    #expect(puts() == 1, "the same request identifier asks Apple once")
                    for (bad, why) in [
                        (#"{"days": 91, "reason": "other"}"#, "days"), (#"{"days": 0, "reason": "other"}"#, "days"),
                        (#"{"days": 3, "reason": "because"}"#, "reason"), (#"{"days": 3}"#, "body"),
                        (#"{"days": 3, "reason": "other", "subscription": "999"}"#, "subscription"),
                    ] {
                        let refused = try await extend(bad)
                        #expect([.badRequest, .notFound].contains(refused.status), "\(why): \(String(buffer: refused.body))")
                    }
                    #expect(puts() == 1, "nothing malformed reaches Apple")

                    // Apple's notification of the extension is a fact like any other: the expiry Storekeeper derives moves.
                    var extended = try #require(apple.server.state.withLock { $0.subscriptions[flow.originalTransactionId]?.transaction })
                    extended.signedDate = Int64(Date().timeIntervalSince1970 * 1000)
                    #expect(extended.expiresDate == expires + 7 * Self.day)
                    try await flow.post(
                        SimulatedEvent(
                            notificationType: "RENEWAL_EXTENDED", subtype: nil, status: 1, signedDate: extended.signedDate!, transaction: extended,
                            renewalInfo: nil))
                    try await eventually("RENEWAL_EXTENDED to move the expiry") {
                        try await flow.detailAnswer().expiresAt
                            == Date(timeIntervalSince1970: Double(expires + 7 * Self.day) / 1000).formatted(.iso8601)
                    }

                    // The account page's form: a second extension within the year, then Apple's limit of two.
                    let basic = "Basic " + Data("sam:support-key-apple-0001".utf8).base64EncodedString()
                    let form = try await client.execute(
                        uri: "/admin/accounts/\(id)/extend", method: .post,
                        headers: [.authorization: basic, .contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: "subscription=\(flow.originalTransactionId)&days=3&reason=customer_satisfaction&request=form-1"))
                    #expect(form.status == .seeOther)
                    #expect(form.headers[.location]?.removingPercentEncoding?.contains("Apple extended") == true, "\(form.headers[.location] ?? "")")
                    let third = try await extend(#"{"days": 1, "reason": "other", "requestIdentifier": "outage-3"}"#)
                    #expect(try third.status == .unprocessableContent && third.answer(ErrorAnswer.self).error == "apple_refused")
                    #expect(try third.answer(ErrorAnswer.self).message.contains("4030005") == true, "\(String(buffer: third.body))")

                    let page = String(
                        buffer: try await client.execute(uri: "/admin?account=\(id)", method: .get, headers: [.authorization: basic]).body)
                    #expect(page.contains("RENEWAL_EXTENDED"), "the timeline shows Apple's notification")
                    #expect(page.contains("outage") == false || page.contains("extended"), "the App Store section lists the requests")
                    #expect(page.contains("Extend renewal date"))
                    let records = try await client.execute(uri: "/admin/accounts/\(id)/extensions", method: .get, headers: Self.viewer)
                        .answer(ExtensionRequestListAnswer.self).extensions
                    #expect(Set(records.map(\.requestIdentifier)) == ["outage-1", "form-1", "outage-3"])
                    #expect(records.first { $0.requestIdentifier == "outage-3" }?.error != nil)
                    #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'renewal.extend'") == 2)

                    // A subscription in its free trial is not eligible (Apple's 4030004).
                    var trialFlow = LifecycleFlow(harness: harness, client: client, account: UUID())
                    _ = try await Self.subscribe(&trialFlow, apple: apple, trial: true)
                    let trial = try await client.execute(
                        uri: "/admin/accounts/\(trialFlow.subscription.accountId!.uuidString.lowercased())/extensions", method: .post,
                        headers: Self.support,
                        body: ByteBuffer(string: #"{"days": 5, "reason": "other"}"#))
                    #expect(
                        try trial.status == .unprocessableContent && trial.answer(ErrorAnswer.self).message.contains("4030004") == true,
                        "\(String(buffer: trial.body))")
                }
            }
        }
    }

    @Test("an order id from a receipt e-mail finds its account with Apple (Production only, said in Sandbox); refund history is Apple's, verified")
    func orderAndRefunds() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: Self.production) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let bought = try await Self.subscribe(&flow, apple: apple)
                    var refunded = bought
                    refunded.transactionId = "\(bought.originalTransactionId)77"
                    refunded.revocationDate = Int64(Date().timeIntervalSince1970 * 1000)
                    refunded.revocationReason = 1
                    refunded.price = 9990
                    refunded.currency = "USD"
                    apple.server.state.withLock { state in
                        state.orders["MK5TTTVWJH"] = [bought.transactionId]
                        state.extraTransactions.append(refunded)
                    }
                    let found = try await client.execute(uri: "/admin/search?q=MK5TTTVWJH", method: .get, headers: Self.viewer)
                        .answer(SearchAnswer.self)
                    #expect(found.matches.map(\.accountId) == [account.uuidString.lowercased()])
                    #expect(found.matches.first?.matchedBy == "order_id")
                    #expect(found.orderLookup?.status == "found")
                    let unknown = try await client.execute(uri: "/admin/search?q=ZZZZ999999", method: .get, headers: Self.viewer)
                        .answer(SearchAnswer.self)
                    #expect(unknown.orderLookup?.status == "invalid_order")
                    #expect(unknown.matches.isEmpty == true)
                    let local = try await client.execute(uri: "/admin/search?q=\(flow.originalTransactionId)", method: .get, headers: Self.viewer)
                        .answer(SearchAnswer.self)
                    #expect(local.orderLookup == nil, "an id found here is not asked of Apple")
                    #expect(apple.server.requests.filter { $0.hasPrefix("GET /inApps/v1/lookup/") }.count == 2)

                    let basic = "Basic " + Data("vera:viewer-key-apple-0001".utf8).base64EncodedString()
                    let page = String(
                        buffer: try await client.execute(uri: "/admin?find=MK5TTTVWJH", method: .get, headers: [.authorization: basic]).body)
                    #expect(page.contains("Timeline of \(account.uuidString.lowercased())"))

                    let refunds = try await client.execute(
                        uri: "/admin/accounts/\(account.uuidString.lowercased())/apple-refunds", method: .get, headers: [.authorization: basic])
                    #expect(refunds.status == .ok, "\(String(buffer: refunds.body))")
                    let listed = try refunds.answer(AppleRefundsAnswer.self).refunds
                    #expect(listed.map(\.transactionId) == [refunded.transactionId])
                    #expect(listed.first?.revocationReason == 1 && listed.first?.price == 9990)
                    let nobody = try await client.execute(
                        uri: "/admin/accounts/nobody-here/apple-refunds", method: .get, headers: [.authorization: basic])
                    #expect(nobody.status == .notFound)
                }
            }
            // A Sandbox-only server cannot look up order ids, and says so.
            try await apple.harness(worker: false, extra: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
                try await harness.withHTTP { client in
                    let answer = try await client.execute(uri: "/admin/search?q=MK5TTTVWJH", method: .get, headers: Self.viewer)
                        .answer(SearchAnswer.self)
                    #expect(answer.orderLookup?.status == "production_only")
                    let basic = "Basic " + Data("vera:viewer-key-apple-0001".utf8).base64EncodedString()
                    let page = String(buffer: try await client.execute(uri: "/admin", method: .get, headers: [.authorization: basic]).body)
                    #expect(page.contains("Production only"))
                }
            }
        }
    }

    @Test(
        "every subscriber of a product: admin only, a dry run counts and asks nothing, the request's status is polled until complete, a SUMMARY notification completes another"
    )
    func extendAll() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
                try await harness.withHTTP { client in
                    var first = LifecycleFlow(harness: harness, client: client, account: UUID())
                    var second = LifecycleFlow(harness: harness, client: client, account: UUID())
                    var trial = LifecycleFlow(harness: harness, client: client, account: UUID())
                    let one = try await Self.subscribe(&first, apple: apple)
                    let two = try await Self.subscribe(&second, apple: apple, storefront: "GBR")
                    _ = try await Self.subscribe(&trial, apple: apple, trial: true)
                    func extendAll(_ body: String, _ headers: HTTPFields = Self.admin) async throws -> TestResponse {
                        try await client.execute(uri: "/admin/extensions", method: .post, headers: headers, body: ByteBuffer(string: body))
                    }
                    func masses() -> Int { apple.server.requests.filter { $0 == "POST /inApps/v1/subscriptions/extend/mass" }.count }
                    let body =
                        #"{"productId": "\#(one.productId)", "days": 5, "reason": "service_issue_or_outage", "requestIdentifier": "mass-1", "dryRun": %@}"#
                    #expect(try await extendAll(String(format: body, "true"), Self.support).status == .forbidden)

                    let dry = try await extendAll(String(format: body, "true"))
                    #expect(dry.status == .ok, "\(String(buffer: dry.body))")
                    #expect(try dry.answer(MassExtensionAnswer.self).activePaidHere == 2, "two paid subscribers; the trial is not counted")
                    #expect(try dry.answer(MassExtensionAnswer.self).request == nil && masses() == 0, "a dry run asks Apple nothing")

                    let asked = try await extendAll(String(format: body, "false"))
                    #expect(asked.status == .accepted, "\(String(buffer: asked.body))")
                    #expect(masses() == 1)
                    #expect(try asked.answer(MassExtensionAnswer.self).request?.complete == false)
                    #expect(try await extendAll(String(format: body, "false")).status == .conflict, "a request identifier is used once")
                    let expiries = apple.server.state.withLock { state in
                        [one, two].map { state.subscriptions[$0.originalTransactionId]?.transaction.expiresDate }
                    }
                    #expect(expiries == [one.expiresDate! + 5 * Self.day, two.expiresDate! + 5 * Self.day])

                    // The dashboard's status link, in a signed-in browser (Basic).
                    let viewerBasic = "Basic " + Data("vera:viewer-key-apple-0001".utf8).base64EncodedString()
                    let polled = try await client.execute(uri: "/admin/extensions/mass-1", method: .get, headers: [.authorization: viewerBasic])
                        .answer(ExtensionRequestAnswer.self)
                    #expect(polled.complete == false)
                    let done = try await client.execute(uri: "/admin/extensions/mass-1", method: .get, headers: Self.viewer)
                        .answer(ExtensionRequestAnswer.self)
                    #expect(done.complete == true && done.succeededCount == 2 && done.failedCount == 1, "\(done)")
                    let polls = apple.server.requests.filter { $0.hasPrefix("GET /inApps/v1/subscriptions/extend/mass/") }.count
                    _ = try await client.execute(uri: "/admin/extensions/mass-1", method: .get, headers: Self.viewer)
                    #expect(
                        apple.server.requests.filter { $0.hasPrefix("GET /inApps/v1/subscriptions/extend/mass/") }.count == polls,
                        "a complete one is not asked again")
                    #expect(try await client.execute(uri: "/admin/extensions/nope", method: .get, headers: Self.viewer).status == .notFound)

                    // Limited to a storefront, then completed by Apple's SUMMARY notification rather than a poll.
                    let gbr = try await extendAll(
                        #"{"productId": "\#(one.productId)", "days": 2, "reason": "other", "requestIdentifier": "mass-2", "storefrontCountryCodes": ["GBR"], "dryRun": false}"#
                    )
                    #expect(gbr.status == .accepted)
                    #expect(
                        try await extendAll(#"{"productId": "x", "days": 2, "reason": "other", "storefrontCountryCodes": ["uk"], "dryRun": true}"#)
                            .status == .badRequest)
                    #expect(
                        try await extendAll(#"{"productId": "no.such.product", "days": 2, "reason": "other", "dryRun": true}"#).status == .badRequest)
                    let summary = NotificationPayload(
                        notificationType: "RENEWAL_EXTENSION", subtype: "SUMMARY", notificationUUID: UUID().uuidString.lowercased(),
                        summary: NotificationSummary(
                            environment: .sandbox, bundleId: StorekeeperHarness.bundleId, productId: one.productId, requestIdentifier: "mass-2",
                            storefrontCountryCodes: ["GBR"], succeededCount: 1, failedCount: 0),
                        signedDate: Int64(Date().timeIntervalSince1970 * 1000))
                    let posted = try await client.postNotification(
                        try JSONEncoder().encode(["signedPayload": try harness.signer.signer.sign(summary)]))
                    #expect(posted.status == .ok)
                    try await eventually("the SUMMARY notification to complete mass-2") {
                        let list = try await client.execute(uri: "/admin/extensions", method: .get, headers: Self.viewer)
                            .answer(ExtensionRequestListAnswer.self)
                        let record = list.extensions.first { $0.requestIdentifier == "mass-2" }
                        return record?.complete == true && record?.succeededCount == 1
                    }
                    #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'renewal.extend-all.dry-run'") == 1)
                    #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'renewal.extend-all'") == 2)

                    // The dashboard: the section lists both, and the form's dry run says what it counted.
                    let basic = "Basic " + Data("ada:admin-key-apple-0001".utf8).base64EncodedString()
                    let form = try await client.execute(
                        uri: "/admin/extend-all", method: .post, headers: [.authorization: basic, .contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: "productId=\(one.productId)&days=4&reason=other&storefronts=&dryRun=true&request=form-mass"))
                    #expect(form.status == .seeOther)
                    #expect(form.headers[.location]?.removingPercentEncoding?.contains("Dry run: 2 paid") == true, "\(form.headers[.location] ?? "")")
                    let page = String(buffer: try await client.execute(uri: "/admin", method: .get, headers: [.authorization: basic]).body)
                    #expect(page.contains("/admin/extensions/mass-1") && page.contains("/admin/extensions/mass-2"))
                }
            }
        }
    }

    @Test(
        "reads that ask Apple (refund history, order lookup, extension status) are in the audit log and bounded per key; an extension's request identifier another account used is refused"
    )
    func boundedReads() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: Self.production) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    _ = try await Self.subscribe(&flow, apple: apple)
                    let id = account.uuidString.lowercased()
                    let refunds = try await client.execute(uri: "/admin/accounts/\(id)/apple-refunds", method: .get, headers: Self.viewer)
                    #expect(refunds.status == .ok, "\(String(buffer: refunds.body))")
                    _ = try await client.execute(uri: "/admin/search?q=MK5TTTVWJH", method: .get, headers: Self.viewer)
                    let audited = try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE operator = 'vera' AND action IN ('apple.refund-history', 'apple.order-lookup')")
                    #expect(audited == 2, "a viewer's questions to Apple are in the audit log")
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM operator_actions WHERE action = 'apple.refund-history' AND account_id = '\(id)'") == 1)

                    // One key asks Apple at a bounded rate: the rest are 429 with Retry-After; another key is not held up.
                    var limited: TestResponse?
                    for _ in 0..<40 {
                        let answer = try await client.execute(uri: "/admin/accounts/\(id)/apple-refunds", method: .get, headers: Self.viewer)
                        if answer.status == .tooManyRequests {
                            limited = answer
                            break
                        }
                        #expect(answer.status == .ok)
                    }
                    let refused = try #require(limited, "40 questions to Apple in a row from one key are not all asked")
                    #expect(
                        try refused.answer(ErrorAnswer.self).error == "rate_limited" && refused.headers[.retryAfter] != nil,
                        "\(String(buffer: refused.body))")
                    let asked = apple.server.requests.filter { $0.contains("/refund/lookup/") }.count
                    #expect(asked <= 31, "Apple was asked \(asked) times")
                    #expect(try await client.execute(uri: "/admin/accounts/\(id)/apple-refunds", method: .get, headers: Self.support).status == .ok)

                    // Apple's request identifier is one request's: another account's use of it is refused, nothing asked.
                    var second = LifecycleFlow(harness: harness, client: client, account: UUID())
                    _ = try await Self.subscribe(&second, apple: apple)
                    let body = #"{"days": 3, "reason": "other", "requestIdentifier": "shared-identifier-1"}"#
                    let first = try await client.execute(
                        uri: "/admin/accounts/\(id)/extensions", method: .post, headers: Self.support, body: ByteBuffer(string: body))
                    #expect(first.status == .created || first.status == .ok, "\(String(buffer: first.body))")
                    let before = apple.server.requests.count
                    let other = try await client.execute(
                        uri: "/admin/accounts/\(second.subscription.accountId!.uuidString.lowercased())/extensions", method: .post,
                        headers: Self.support,
                        body: ByteBuffer(string: body))
                    #expect(
                        try other.status == .conflict && other.answer(ErrorAnswer.self).error == "request_identifier_taken",
                        "\(String(buffer: other.body))")
                    #expect(apple.server.requests.count == before)
                }
            }
        }
    }
}
