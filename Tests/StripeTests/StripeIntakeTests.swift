import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import StripeStore
import Testing

@testable import IntegrationSupport

/// `POST /stripe/webhooks` through the real router, queue, worker and PostgreSQL: what Stripe's retries and a stranger
/// meet.
@Suite("Stripe webhook intake, on real PostgreSQL")
struct StripeIntakeTests {
    static let secrets = ["whsec_rolled_out_secret_1", "whsec_current_secret_22"]

    func post(_ client: any TestClientProtocol, _ body: [UInt8], header: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let header { headers[HTTPField.Name("Stripe-Signature")!] = header }
        return try await client.execute(uri: "/stripe/webhooks", method: .post, headers: headers, body: ByteBuffer(bytes: body))
    }

    func signed(_ body: [UInt8], secret: String = secrets[1], at date: Date = Date()) -> String {
        StripeSignature(secrets: [secret]).header(body: body, timestamp: Int64(date.timeIntervalSince1970))
    }

    @Test("a signed event is stored and processed once; a retry is a duplicate; the other livemode is stored and ignored")
    func acceptedOnce() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_STRIPE_WEBHOOK_SECRETS": Self.secrets.joined(separator: ",")]) { harness in
            try await harness.withHTTP { client in
                let body = StripeWorld.event("evt_accepted_1")
                let first = try await post(client, body, header: signed(body))
                let firstAnswer = try first.answer(StripeIntakeAnswer.self)
                #expect(first.status == .ok && firstAnswer.status == "accepted" && firstAnswer.eventId == "evt_accepted_1")
                // Signed with the secret being rolled out: still good.
                let retried = try await post(client, body, header: signed(body, secret: Self.secrets[0]))
                #expect(try retried.answer(StripeIntakeAnswer.self).status == "duplicate")
                try await eventually("the event to be processed") {
                    try await harness.count("SELECT count(*) FROM stripe_events WHERE id = 'evt_accepted_1' AND outcome = 'recorded'") == 1
                }
                let live = StripeWorld.event("evt_live_1", livemode: true)
                #expect(try await post(client, live, header: signed(live)).answer(StripeIntakeAnswer.self).status == "ignored")
                #expect(try await harness.count("SELECT count(*) FROM stripe_events WHERE ignored") == 1)
                let waiting = try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'stripe-event'")
                let finished = try await harness.count("SELECT count(*) FROM job_history WHERE kind = 'stripe-event'")
                #expect(waiting + finished == 1)
                #expect(try await harness.count("SELECT count(*) FROM stripe_events") == 2)
            }
        }
    }

    static let huge = Array(
        #"{"id":"evt_huge_1","object":"event","created":5792185922704059392,"livemode":false,"type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice"}}}"#
            .utf8)

    @Test(
        "unsigned, wrongly signed, stale, malformed, too deeply nested and oversized requests: 400 (with the parser's reason), 401, 413, and nothing stored"
    )
    func refused() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_STRIPE_WEBHOOK_SECRETS": Self.secrets[1]]) { harness in
            try await harness.withHTTP { client in
                let body = StripeWorld.event("evt_refused_1")
                let cases: [(String, [UInt8], String?, HTTPResponse.Status)] = [
                    ("no header", body, nil, .badRequest),
                    ("no t", body, "v1=" + String(repeating: "0", count: 64), .badRequest),
                    ("another secret", body, signed(body, secret: "whsec_an_attackers_secret"), .unauthorized),
                    ("a changed body", StripeWorld.event("evt_refused_2"), signed(body), .unauthorized),
                    ("six minutes old", body, signed(body, at: Date().addingTimeInterval(-360)), .unauthorized),
                    ("not an event", Array(#"{"hello":"world"}"#.utf8), signed(Array(#"{"hello":"world"}"#.utf8)), .badRequest),
                    ("not evt_", StripeWorld.event("sub_1"), signed(StripeWorld.event("sub_1")), .badRequest),
                    ("not JSON", Array("evt_1".utf8), signed(Array("evt_1".utf8)), .badRequest),
                    // Signed, so only Stripe (or a leaked secret) can send it; past year 9999 it once crashed the process.
                    ("created past 9999", Self.huge, signed(Self.huge), .badRequest),
                ]
                for (label, payload, header, expected) in cases {
                    let answer = try await post(client, payload, header: header)
                    #expect(answer.status == expected, "\(label): \(answer.status)")
                    #expect((try? answer.answer(ErrorAnswer.self)) != nil, "\(label): \(String(buffer: answer.body))")
                }
                // Past a parser limit: the 400 says which (docs/security.md), as the Apple intake's does.
                let deep = Array((String(repeating: "[", count: 70) + String(repeating: "]", count: 70)).utf8)
                let nested = try await post(client, deep, header: signed(deep))
                #expect(
                    try nested.status == .badRequest && nested.answer(ErrorAnswer.self).message.contains("nesting deeper than 64") == true,
                    "\(String(buffer: nested.body))")
                let huge = [UInt8](repeating: 0x20, count: 600 * 1024)
                let tooLarge = try await post(client, huge, header: signed(huge))
                #expect(tooLarge.status == .contentTooLarge)
                #expect(try await harness.count("SELECT count(*) FROM stripe_events") == 0)
            }
        }
    }

    @Test("without STOREKEEPER_STRIPE_WEBHOOK_SECRETS there is no Stripe endpoint")
    func offWithoutSecrets() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let body = StripeWorld.event("evt_off_1")
                let answer = try await post(client, body, header: signed(body))
                #expect(answer.status == .notFound)
            }
        }
    }
}
