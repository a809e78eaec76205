import Credits
import Events
import Foundation
import Subscriptions
import Testing

@Suite struct WebhookSignatureTests {
    @Test("Standard Webhooks' published test vector signs as the specification says")
    func specificationVector() throws {
        // From the Standard Webhooks specification's reference libraries' tests.
        let signature = WebhookSignature(secrets: [try WebhookSignature.Secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")])
        let body = Data(#"{"test": 2432232314}"#.utf8)
        let header = signature.header(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body)
        #expect(header == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(signature.verify(header: header, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body))
        #expect(!signature.verify(header: header, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_331, body: body))
        #expect(
            !signature.verify(header: header, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Data(#"{"test": 2432232315}"#.utf8))
        )
    }

    @Test("During a rotation both secrets sign; a receiver holding either accepts, one holding neither refuses")
    func rotation() throws {
        let old = WebhookSignature.Secret.generate()
        let new = WebhookSignature.Secret.generate()
        let header = WebhookSignature(secrets: [new, old]).header(id: "e1", timestamp: 10, body: Data("{}".utf8))
        #expect(header.split(separator: " ").count == 2)
        #expect(WebhookSignature(secrets: [old]).verify(header: header, id: "e1", timestamp: 10, body: Data("{}".utf8)))
        #expect(WebhookSignature(secrets: [new]).verify(header: header, id: "e1", timestamp: 10, body: Data("{}".utf8)))
        #expect(!WebhookSignature(secrets: [.generate()]).verify(header: header, id: "e1", timestamp: 10, body: Data("{}".utf8)))
    }

    @Test("Secrets must be whsec_ and base64 of 24–64 bytes")
    func secrets() {
        #expect(throws: WebhookSignature.InvalidSecret.self) { try WebhookSignature.Secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") }
        #expect(throws: WebhookSignature.InvalidSecret.self) { try WebhookSignature.Secret("whsec_c2hvcnQ=") }
        #expect(throws: WebhookSignature.InvalidSecret.self) { try WebhookSignature.Secret("whsec_!!!") }
    }

    @Test("Retries go on for more than 24 hours, then stop")
    func schedule() {
        let schedule = WebhookRetrySchedule()
        let start = Date(timeIntervalSince1970: 0)
        var at = start
        var attempts = 1
        while let next = schedule.nextAttempt(afterFailedAttempts: attempts, at: at) {
            at = next
            attempts += 1
        }
        #expect(attempts == schedule.maximumAttempts)
        #expect(at.timeIntervalSince(start) > 24 * 3600)
    }

    @Test("Type filters take exact types, prefixes and *; unknown names are refused")
    func filters() throws {
        let filter = try EventTypeFilter(["subscription.*", "credits.depleted"])
        #expect(filter.matches(.subscriptionRenewed) && filter.matches(.creditsDepleted))
        #expect(!filter.matches(.creditsGranted) && !filter.matches(.purchaseRefundRequested))
        #expect(EventTypeFilter.all.types.count == EventType.allCases.count)
        #expect(throws: EventTypeFilter.Problem.self) { try EventTypeFilter(["subscription.renewd"]) }
        #expect(throws: EventTypeFilter.Problem.self) { try EventTypeFilter(["nothing.*"]) }
    }
}
