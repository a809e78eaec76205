import Foundation
import GooglePlay
import Testing

/// Play's notifications as the Real-time developer notifications reference shows them, read back; and what is not one.
@Suite("Play DeveloperNotification")
struct DeveloperNotificationTests {
    static func push(_ notification: String, messageId: String = "136969346945") -> [UInt8] {
        let data = Data(notification.utf8).base64EncodedString()
        return Array(#"{"message":{"attributes":{"key":"value"},"data":"\#(data)","messageId":"\#(messageId)","publishTime":"2021-02-26T19:13:55.749Z"},"subscription":"projects/myproject/subscriptions/mysubscription"}"#.utf8)
    }

    @Test("the reference's four examples: subscription, one-time product, voided purchase, test")
    func referenceExamples() throws {
        let subscription = try DeveloperNotification(data: try PubSubPush(body: Self.push(
            #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"503349566168","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"PURCHASE_TOKEN","subscriptionId":"my.sku"}}"#)).data)
        #expect(subscription.content == .subscription(type: .purchased, purchaseToken: "PURCHASE_TOKEN"))
        #expect(subscription.packageName == "com.some.thing" && subscription.eventTime == Date(timeIntervalSince1970: 503_349_566.168))
        let oneTime = try DeveloperNotification(data: try PubSubPush(body: Self.push(
            #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"503349566168","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"PURCHASE_TOKEN","sku":"my.sku"}}"#)).data)
        #expect(oneTime.content == .oneTimeProduct(type: .purchased, purchaseToken: "PURCHASE_TOKEN", productId: "my.sku"))
        let voided = try DeveloperNotification(data: try PubSubPush(body: Self.push(
            #"{"version":"1.0","packageName":"com.some.app","eventTimeMillis":"503349566168","voidedPurchaseNotification":{"purchaseToken":"PURCHASE_TOKEN","orderId":"GS.0000-0000-0000","productType":1,"refundType":1}}"#)).data)
        #expect(voided.content == .voidedPurchase(purchaseToken: "PURCHASE_TOKEN", orderId: "GS.0000-0000-0000", productType: 1, refundType: 1))
        let push = try PubSubPush(body: Self.push(#"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1503349566168","testNotification":{"version":"1.0"}}"#))
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
