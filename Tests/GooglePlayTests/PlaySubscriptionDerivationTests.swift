import Foundation
import GooglePlay
import Testing

/// The Play source's state as a pure function of stored subscriptionsv2 reads, with expectations taken from Play's
/// subscription lifecycle documentation: which states entitle, a new order id is a new paid period, a linked token
/// continues its subscription and the old one stops entitling — whatever order the reads are in.
@Suite("Play subscriptions derived from reads")
struct PlaySubscriptionDerivationTests {
    static let day: TimeInterval = 86_400
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// A read of `token` as `purchases.subscriptionsv2.get` answers it (the v3 discovery document's shapes).
    static func read(
        _ token: String, state: String = "SUBSCRIPTION_STATE_ACTIVE", started: Date = start, expires: Date? = start.addingTimeInterval(30 * day),
        order: String? = "GPA.3300-0000-0000-00001", linked: String? = nil, account: String? = "acct-token-1", trial: Bool = false,
        autoRenew: Bool = true, readAt: Date = start, product: String = "pro", basePlan: String = "monthly", cancellation: String? = nil
    ) throws -> PlaySubscriptionRead {
        var line: [String: Any] = [
            "productId": product, "offerDetails": ["basePlanId": basePlan],
            "autoRenewingPlan": ["autoRenewEnabled": autoRenew, "recurringPrice": ["currencyCode": "EUR", "units": "9", "nanos": 990_000_000]]
                as [String: Any],
            "offerPhase": trial ? ["freeTrial": [:] as [String: String]] : ["basePrice": [:] as [String: String]],
        ]
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        if let expires { line["expiryTime"] = expires.formatted(time) }
        if let order { line["latestSuccessfulOrderId"] = order }
        var purchase: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "subscriptionState": state, "startTime": started.formatted(time),
            "lineItems": [line], "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED", "regionCode": "DE",
        ]
        if let linked { purchase["linkedPurchaseToken"] = linked }
        if let cancellation { purchase["canceledStateContext"] = [cancellation: [:] as [String: String]] }
        if let account { purchase["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] }
        let data = try JSONSerialization.data(withJSONObject: purchase)
        return PlaySubscriptionRead(purchaseToken: token, readAt: readAt, purchase: try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: data))
    }

    @Test("a read decodes as Google writes it: state, line item, Money in milliunits, trial phase, account id")
    func decoding() throws {
        let read = try Self.read("t1", trial: true)
        let line = try #require(read.purchase.mainLineItem)
        #expect(read.purchase.subscriptionState == .active && line.productId == "pro" && line.basePlanId == "monthly")
        #expect(line.recurringPrice?.milliunits == 9_990 && line.recurringPrice?.currencyCode == "EUR")
        #expect(line.offerPhase == "freeTrial" && line.expiryTime == Self.start.addingTimeInterval(30 * Self.day))
        #expect(read.purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "acct-token-1" && !read.purchase.isTest)
        #expect(SubscriptionPurchaseV2.SubscriptionState("SUBSCRIPTION_STATE_SOMETHING_NEW") == .unknown("SUBSCRIPTION_STATE_SOMETHING_NEW"))
    }

    @Test("ACTIVE, IN_GRACE_PERIOD and CANCELED entitle until the expiry; PAUSED, ON_HOLD, PENDING, EXPIRED and the rest do not")
    func entitlementByState() throws {
        let expectations: [(String, Bool)] = [
            ("SUBSCRIPTION_STATE_ACTIVE", true), ("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", true), ("SUBSCRIPTION_STATE_CANCELED", true),
            ("SUBSCRIPTION_STATE_PAUSED", false), ("SUBSCRIPTION_STATE_ON_HOLD", false), ("SUBSCRIPTION_STATE_PENDING", false),
            ("SUBSCRIPTION_STATE_EXPIRED", false), ("SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", false),
            ("SUBSCRIPTION_STATE_UNSPECIFIED", false),
        ]
        for (state, entitles) in expectations {
            let subscription = try #require(PlaySubscriptionDerivation.derive([try Self.read("t1", state: state)]).first)
            #expect(subscription.isEntitled(at: Self.start.addingTimeInterval(Self.day)) == entitles, "\(state)")
            #expect(!subscription.isEntitled(at: Self.start.addingTimeInterval(31 * Self.day)), "\(state) past the expiry")
        }
        let noExpiry = try #require(PlaySubscriptionDerivation.derive([try Self.read("t1", expires: nil)]).first)
        #expect(!noExpiry.isEntitled(at: Self.start), "no expiry, no access")
    }

    @Test("a renewal's new order id is a new paid period; a read repeating an order is not; the newest read decides the state")
    func periods() throws {
        let reads = [
            try Self.read("t1"),
            try Self.read(
                "t1", expires: Self.start.addingTimeInterval(60 * Self.day), order: "GPA.3300-0000-0000-00001..0",
                readAt: Self.start.addingTimeInterval(30 * Self.day)),
            try Self.read(
                "t1", expires: Self.start.addingTimeInterval(60 * Self.day), order: "GPA.3300-0000-0000-00001..0",
                readAt: Self.start.addingTimeInterval(31 * Self.day)),
            try Self.read(
                "t1", state: "SUBSCRIPTION_STATE_CANCELED", expires: Self.start.addingTimeInterval(60 * Self.day),
                order: "GPA.3300-0000-0000-00001..0",
                autoRenew: false, readAt: Self.start.addingTimeInterval(40 * Self.day)),
        ]
        let subscription = try #require(PlaySubscriptionDerivation.derive(reads).first)
        #expect(subscription.periods.map(\.orderId) == ["GPA.3300-0000-0000-00001", "GPA.3300-0000-0000-00001..0"])
        #expect(subscription.state == .canceled && !subscription.willRenew && subscription.productId == "pro/monthly")
        #expect(
            subscription.isEntitled(at: Self.start.addingTimeInterval(59 * Self.day))
                && !subscription.isEntitled(at: Self.start.addingTimeInterval(61 * Self.day)))
    }

    @Test("an upgrade's token links the old one: one subscription under the first token, the new token current, the old one no longer entitling")
    func tokenChain() throws {
        let upgradeAt = Self.start.addingTimeInterval(10 * Self.day)
        let reads = [
            try Self.read("old", state: "SUBSCRIPTION_STATE_EXPIRED", expires: upgradeAt, readAt: upgradeAt),
            try Self.read(
                "new", started: upgradeAt, expires: upgradeAt.addingTimeInterval(30 * Self.day), order: "GPA.3300-0000-0000-00002",
                linked: "old", readAt: upgradeAt, basePlan: "yearly"),
            try Self.read("other", account: "acct-token-2"),
        ]
        let derived = PlaySubscriptionDerivation.derive(reads)
        #expect(derived.map(\.id) == ["old", "other"])
        let upgraded = try #require(derived.first)
        #expect(upgraded.tokens == ["old", "new"] && upgraded.currentToken == "new" && upgraded.productId == "pro/yearly")
        #expect(upgraded.isEntitled(at: upgradeAt.addingTimeInterval(Self.day)) && upgraded.periods.count == 2)
        // The old token read again later (still active by a stale read) does not make it current.
        let stale = try Self.read("old", readAt: upgradeAt.addingTimeInterval(Self.day))
        let again = try #require(PlaySubscriptionDerivation.derive(reads + [stale]).first)
        #expect(again.currentToken == "new" && again.productId == "pro/yearly")
        // A predecessor never read still names the subscription: its id stays when that read arrives.
        let orphan = try #require(PlaySubscriptionDerivation.derive([reads[1]]).first)
        #expect(orphan.id == "old" && orphan.tokens == ["new"])
    }

    @Test("an upgrade still pending, or abandoned (PENDING_PURCHASE_CANCELED), replaces nothing: the plan paid for stays current")
    func pendingUpgrade() throws {
        let asked = Self.start.addingTimeInterval(10 * Self.day)
        let paid = try Self.read("paid", readAt: asked)
        for state in ["SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"] {
            let pending = try Self.read(
                "upgrade", state: state, started: asked, expires: nil, order: nil, linked: "paid", readAt: asked.addingTimeInterval(60),
                basePlan: "yearly")
            let subscription = try #require(PlaySubscriptionDerivation.derive([paid, pending]).first)
            #expect(subscription.currentToken == "paid" && subscription.productId == "pro/monthly", "\(state)")
            #expect(subscription.isEntitled(at: asked.addingTimeInterval(Self.day)), "\(state)")
        }
        // Once the upgrade is paid it replaces the old token.
        let granted = try Self.read(
            "upgrade", started: asked, expires: asked.addingTimeInterval(365 * Self.day), order: "GPA.7", linked: "paid",
            readAt: asked.addingTimeInterval(120), basePlan: "yearly")
        #expect(PlaySubscriptionDerivation.derive([paid, granted]).first?.currentToken == "upgrade")
    }

    @Test("the main line item is one owned (with an order id): an item a deferred replacement will move to does not decide access yet")
    func deferredItem() throws {
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let json = """
            {"subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","startTime":"\(Self.start.formatted(time))","lineItems":[
              {"productId":"gold","expiryTime":"\(Self.start.addingTimeInterval(30 * Self.day).formatted(time))","latestSuccessfulOrderId":"GPA.1","offerDetails":{"basePlanId":"monthly"},"deferredItemReplacement":{"productId":"silver"}},
              {"productId":"silver","expiryTime":"\(Self.start.addingTimeInterval(60 * Self.day).formatted(time))","offerDetails":{"basePlanId":"monthly"}}]}
            """
        let purchase = try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(json.utf8))
        #expect(purchase.mainLineItem?.productId == "gold")
    }

    @Test("any order and any duplicates of the same reads derive the same subscriptions")
    func orderIndependence() throws {
        let upgradeAt = Self.start.addingTimeInterval(10 * Self.day)
        let reads = [
            try Self.read("a"),
            try Self.read("a", state: "SUBSCRIPTION_STATE_EXPIRED", expires: upgradeAt, readAt: upgradeAt),
            try Self.read(
                "b", started: upgradeAt, expires: upgradeAt.addingTimeInterval(30 * Self.day), order: "GPA.2", linked: "a", readAt: upgradeAt),
            try Self.read(
                "b", state: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", started: upgradeAt, expires: upgradeAt.addingTimeInterval(33 * Self.day),
                order: "GPA.2",
                linked: "a", readAt: upgradeAt.addingTimeInterval(30 * Self.day)),
            try Self.read("c", state: "SUBSCRIPTION_STATE_PAUSED", account: nil),
            try Self.read(
                "d", started: upgradeAt.addingTimeInterval(Self.day), order: "GPA.4", linked: "b", account: "acct-token-9",
                readAt: upgradeAt.addingTimeInterval(31 * Self.day)),
        ]
        let expected = PlaySubscriptionDerivation.derive(reads)
        #expect(expected.count == 2 && expected[0].tokens == ["a", "b", "d"] && expected[0].accountToken == "acct-token-9")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var shuffled = (reads + reads.filter { _ in Bool.random(using: &generator) }).shuffled(using: &generator)
            shuffled.shuffle(using: &generator)
            #expect(PlaySubscriptionDerivation.derive(shuffled) == expected)
        }
    }
}

/// Play's times as PostgreSQL gives them back: a subscription read again from Play must not look changed.
@Suite("Play times to the millisecond")
struct PlayTimePrecisionTests {
    @Test("an expiryTime of milliseconds (or nanoseconds) decodes to the Date a stored expiry reads back as, for 20,000 random times")
    func expiryReadsBackAsStored() throws {
        var generator = SystemRandomNumberGenerator()
        var differing: [String] = []
        for _ in 0..<20_000 {
            let milliseconds = Int64.random(in: 1_700_000_000_000..<1_900_000_000_000, using: &generator)
            // What a stored expiry reads back as: whole milliseconds (Date.wholeMilliseconds).
            let stored = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let whole = Date(timeIntervalSince1970: Double(milliseconds / 1000))
            let fraction = String(format: "%03d", milliseconds % 1000)
            let iso = whole.formatted(Date.ISO8601FormatStyle()).dropLast()  // "…:05" without the Z
            for text in ["\(iso).\(fraction)Z", "\(iso).\(fraction)000000Z"] {
                let json = #"{"subscriptionState":"SUBSCRIPTION_STATE_ACTIVE","lineItems":[{"productId":"p","expiryTime":"\#(text)"}]}"#
                let purchase = try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(json.utf8))
                if purchase.lineItems.first?.expiryTime != stored { differing.append(text) }
            }
        }
        #expect(differing.isEmpty, "\(differing.count) differ, such as \(differing.prefix(3))")
    }
}
