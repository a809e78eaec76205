import Foundation
import GooglePlay
import Testing

/// Play's notifications as the Real-time developer notifications reference shows them, read back; and what is not one.
@Suite("Play DeveloperNotification")
struct DeveloperNotificationTests {
    static func push(_ notification: String, messageId: String = "136969346945") -> [UInt8] {
        let data = Data(notification.utf8).base64EncodedString()
        return Array(
            #"{"message":{"attributes":{"key":"value"},"data":"\#(data)","messageId":"\#(messageId)","publishTime":"2021-02-26T19:13:55.749Z"},"subscription":"projects/myproject/subscriptions/mysubscription"}"#
                .utf8)
    }

    @Test("the reference's four examples: subscription, one-time product, voided purchase, test")
    func referenceExamples() throws {
        let subscription = try DeveloperNotification(
            data: try PubSubPush(
                body: Self.push(
                    #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"503349566168","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"PURCHASE_TOKEN","subscriptionId":"my.sku"}}"#
                )
            ).data)
        #expect(subscription.content == .subscription(type: .purchased, purchaseToken: "PURCHASE_TOKEN"))
        #expect(subscription.packageName == "com.some.thing" && subscription.eventTime == Date(timeIntervalSince1970: 503_349_566.168))
        let oneTime = try DeveloperNotification(
            data: try PubSubPush(
                body: Self.push(
                    #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"503349566168","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"PURCHASE_TOKEN","sku":"my.sku"}}"#
                )
            ).data)
        #expect(oneTime.content == .oneTimeProduct(type: .purchased, purchaseToken: "PURCHASE_TOKEN", productId: "my.sku"))
        let voided = try DeveloperNotification(
            data: try PubSubPush(
                body: Self.push(
                    #"{"version":"1.0","packageName":"com.some.app","eventTimeMillis":"503349566168","voidedPurchaseNotification":{"purchaseToken":"PURCHASE_TOKEN","orderId":"GS.0000-0000-0000","productType":1,"refundType":1}}"#
                )
            ).data)
        #expect(voided.content == .voidedPurchase(purchaseToken: "PURCHASE_TOKEN", orderId: "GS.0000-0000-0000", productType: 1, refundType: 1))
        let push = try PubSubPush(
            body: Self.push(
                #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1503349566168","testNotification":{"version":"1.0"}}"#))
        #expect(try DeveloperNotification(data: push.data).content == .test)
        #expect(push.messageId == "136969346945" && push.subscription == "projects/myproject/subscriptions/mysubscription")
        #expect(abs((push.publishTime?.timeIntervalSince1970 ?? 0) - 1_614_366_835.749) < 0.001)
    }

    @Test("every numbered type the reference lists maps to its case and back; unassigned numbers are unknown, never refused")
    func numberedTypes() {
        let listed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 20, 22]
        for number in listed {
            let type = SubscriptionNotificationType(rawValue: number)
            #expect(type != .unknown(number) && type.rawValue == number, "\(number)")
        }
        #expect(Set(listed.map(SubscriptionNotificationType.init(rawValue:))).count == listed.count)
        for number in [0, 14, 15, 16, 21, 23, -1] { #expect(SubscriptionNotificationType(rawValue: number) == .unknown(number)) }
        #expect(SubscriptionNotificationType(rawValue: 12) == .revoked && SubscriptionNotificationType(rawValue: 22) == .priceStepUpConsentUpdated)
        #expect(OneTimeProductNotificationType(rawValue: 2) == .canceled && OneTimeProductNotificationType(rawValue: 3) == .unknown(3))
    }

    @Test("pushes and notifications that are not one are refused with a reason")
    func refusals() {
        let bodies: [(String, [UInt8])] = [
            ("not JSON", Array("{".utf8)),
            ("no message", Array(#"{"subscription":"s"}"#.utf8)),
            ("message id with a space", Array(#"{"message":{"data":"e30=","messageId":"1 2"},"subscription":"s"}"#.utf8)),
            ("no subscription", Array(#"{"message":{"data":"e30=","messageId":"1"}}"#.utf8)),
            ("empty data", Array(#"{"message":{"data":"","messageId":"1"},"subscription":"s"}"#.utf8)),
        ]
        for (label, body) in bodies {
            #expect(throws: PubSubPush.Refusal.self, "\(label)") { try PubSubPush(body: body) }
        }
        let notifications = [
            #"[]"#, #"{"packageName":"","testNotification":{}}"#, #"{"testNotification":{}}"#,
            #"{"packageName":"a.b","subscriptionNotification":{"notificationType":4}}"#,
            #"{"packageName":"a.b","subscriptionNotification":{"purchaseToken":"t"}}"#,
            #"{"packageName":"a.b","testNotification":{},"voidedPurchaseNotification":{"purchaseToken":"t"}}"#,
            #"{"packageName":"a.b","oneTimeProductNotification":{"notificationType":1,"purchaseToken":"\#(String(repeating: "t", count: 2049))"}}"#,
        ]
        for text in notifications {
            #expect(throws: PubSubPush.Refusal.self, "\(text.prefix(80))") { try DeveloperNotification(data: Array(text.utf8)) }
        }
        // A kind Google adds later is kept as unknown, never refused (Pub/Sub would resend a refused one for days).
        let future = try? DeveloperNotification(data: Array(#"{"packageName":"a.b","futureKindNotification":{"x":1}}"#.utf8))
        #expect(future?.content == .unknown && future?.kind == "unknown")
        #expect(DeveloperNotification.packageName(in: Array(#"{"packageName":"com.other","subscriptionNotification":7}"#.utf8)) == "com.other")
        // An absurd time is no time, not a refusal: the notification still names its token.
        let late = try? DeveloperNotification(data: Array(#"{"packageName":"a.b","eventTimeMillis":"99999999999999999","testNotification":{}}"#.utf8))
        #expect(late?.eventTime == nil && late?.content == .test)
    }
}

/// One-time products and refunds as Google writes them.
@Suite("Play one-time purchases and refunds derived from reads")
struct PlayProductPurchaseTests {
    static func read(quantity: Int = 3, refundable: Int? = nil, state: String = "PURCHASED", order: String? = "GPA.3377-0000-0000-00001") throws
        -> PlayProductRead
    {
        var purchase: [String: Any] = [
            "kind": "androidpublisher#productPurchaseV2", "purchaseStateContext": ["purchaseState": state],
            "purchaseCompletionTime": "2026-12-01T10:00:00.000Z", "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
            "obfuscatedExternalAccountId": "acct-1",
            "productLineItem": [
                [
                    "productId": "credits_100",
                    "productOfferDetails": [
                        "quantity": quantity, "refundableQuantity": refundable ?? quantity,
                        "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED",
                    ],
                ]
            ],
        ]
        if let order { purchase["orderId"] = order }
        return PlayProductRead(
            purchaseToken: "tok-1", readAt: Date(timeIntervalSince1970: 1_796_000_000),
            purchase: try JSONDecoder().decode(ProductPurchaseV2.self, from: JSONSerialization.data(withJSONObject: purchase)))
    }

    static func voided(partial: Bool, quantity: Int64? = nil, order: String = "GPA.3377-0000-0000-00001", at: TimeInterval = 1_796_100_000)
        -> VoidedPurchase
    {
        VoidedPurchase(purchaseToken: "tok-1", orderId: order, voidedAt: Date(timeIntervalSince1970: at), quantity: quantity, isPartial: partial)
    }

    @Test("a purchase is its order; a pending or cancelled one grants nothing; one without an order is its token")
    func purchase() throws {
        let bought = try #require(PlayProductPurchase(try Self.read(), voided: []))
        #expect(bought.id == "GPA.3377-0000-0000-00001" && bought.quantity == 3 && bought.voidedQuantity == 0 && bought.awaitsAcknowledgement)
        #expect(bought.accountToken == "acct-1" && !bought.isConsumed && !bought.isVoided)
        #expect(PlayProductPurchase(try Self.read(state: "PENDING"), voided: []) == nil)
        #expect(PlayProductPurchase(try Self.read(state: "CANCELLED"), voided: []) == nil)
        #expect(PlayProductPurchase(try Self.read(order: nil), voided: [])?.id == "tok-1")
    }

    @Test("a partial refund counts once whether the list's quantity, the read's refundable quantity or both say it; a full refund takes all")
    func refunds() throws {
        // The notification alone says "partial" without a quantity: the read again says what is still refundable.
        #expect(PlayProductPurchase(try Self.read(refundable: 2), voided: [Self.voided(partial: true)])?.voidedQuantity == 1)
        // The list's entry says the quantity; the read not yet.
        #expect(PlayProductPurchase(try Self.read(), voided: [Self.voided(partial: true, quantity: 1)])?.voidedQuantity == 1)
        // Both: the same refund, once.
        let both = [Self.voided(partial: true), Self.voided(partial: true, quantity: 1, at: 1_796_100_001)]
        #expect(PlayProductPurchase(try Self.read(refundable: 2), voided: both)?.voidedQuantity == 1)
        // Without a refund recorded, a read's refundable quantity alone takes nothing (the refund is not known yet).
        #expect(PlayProductPurchase(try Self.read(refundable: 2), voided: [])?.voidedQuantity == 0)
        let full = try #require(
            PlayProductPurchase(try Self.read(refundable: 2), voided: [Self.voided(partial: true), Self.voided(partial: false, at: 1_796_200_000)]))
        #expect(full.isVoided && full.voidedQuantity == 3 && full.voidedAt == Date(timeIntervalSince1970: 1_796_200_000))
        // Another order's refund is not this purchase's.
        #expect(PlayProductPurchase(try Self.read(), voided: [Self.voided(partial: false, order: "GPA.other")])?.isVoided == false)
    }

    @Test("a later read that no longer says PURCHASED does not hide what was granted: the refunds recorded take it back")
    func laterRead() throws {
        let granted = try Self.read()
        var cancelled = try Self.read(refundable: 0, state: "CANCELLED")
        cancelled.readAt = granted.readAt.addingTimeInterval(86_400)
        let kept = try #require(PlayProductPurchase(cancelled, purchased: granted, voided: []))
        #expect(kept.quantity == 3 && kept.voidedQuantity == 0 && kept.observedAt == cancelled.readAt, "no refund recorded: nothing taken")
        let refunded = try #require(PlayProductPurchase(cancelled, purchased: granted, voided: [Self.voided(partial: false)]))
        #expect(refunded.isVoided)
        #expect(PlayProductPurchase(cancelled, voided: []) == nil, "never granted: nothing")
    }

    @Test("a voidedpurchases.list page decodes as Google writes it: times as strings, the partial quantity, the page token")
    func voidedPage() throws {
        let page = try JSONDecoder().decode(
            VoidedPurchase.Page.self,
            from: Data(
                #"""
                {"voidedPurchases": [{"kind": "androidpublisher#voidedPurchase", "purchaseToken": "t", "orderId": "GPA.1", "purchaseTimeMillis": "1796000000000",
                  "voidedTimeMillis": "1796100000000", "voidedSource": 0, "voidedReason": 7, "voidedQuantity": 2}], "tokenPagination": {"nextPageToken": "abc"}}
                """#.utf8))
        #expect(page.nextPageToken == "abc" && page.voidedPurchases.count == 1)
        let entry = try #require(page.voidedPurchases.first)
        #expect(entry.isPartial && entry.quantity == 2 && entry.reason == 7 && entry.voidedAt == Date(timeIntervalSince1970: 1_796_100_000))
        // An entry without a token or with a time out of range is skipped, not the page; one without an order is its token's.
        let odd = try JSONDecoder().decode(
            VoidedPurchase.Page.self,
            from: Data(
                #"""
                {"voidedPurchases": [{"orderId": "GPA.1", "voidedTimeMillis": "1"}, {"purchaseToken": "t", "orderId": "GPA.2", "voidedTimeMillis": "99999999999999999"},
                  {"purchaseToken": "t3", "voidedTimeMillis": "1796100000000"}]}
                """#.utf8))
        #expect(odd.skipped == 2 && odd.voidedPurchases.map(\.orderId) == ["t3"])
    }

    @Test("a pending refund review carries its token and order; one without them is refused")
    func review() throws {
        let json =
            #"{"version": "1.0", "packageName": "com.example", "eventTimeMillis": "1796000000000", "pendingRefundReviewNotification": {"version": "1.0", "pendingRefundToken": "rt-1", "orderId": "GPA.1", "refundReason": 7}}"#
        let notification = try DeveloperNotification(data: Array(json.utf8))
        #expect(
            notification.content == .pendingRefundReview(reviewToken: "rt-1", orderId: "GPA.1", refundReason: 7)
                && notification.kind == "pending_refund_review")
        let text =
            #"{"version": "1.0", "packageName": "com.example", "pendingRefundReviewNotification": {"pendingRefundToken": "rt-2", "orderId": "GPA.2", "refundReason": "7"}}"#
        #expect(
            try DeveloperNotification(data: Array(text.utf8)).content == .pendingRefundReview(reviewToken: "rt-2", orderId: "GPA.2", refundReason: 7))
        let missing = #"{"version": "1.0", "packageName": "com.example", "pendingRefundReviewNotification": {"orderId": "GPA.1"}}"#
        #expect(throws: PubSubPush.Refusal.self) { try DeveloperNotification(data: Array(missing.utf8)) }
    }
}
