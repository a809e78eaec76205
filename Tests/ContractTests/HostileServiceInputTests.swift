import Foundation
import HummingbirdTesting
import Testing

@testable import IntegrationSupport

/// The routes added for events, refunds and offers, fed what a stranger would send: oversized and deeply nested
/// bodies, numbers past their type, absurd ids, cursors and filters. Each gets a clear 4xx, nothing is stored, and
/// the server still answers afterwards.
@Suite("Hostile input to the service API's new routes")
struct HostileServiceInputTests {
    @Test("oversized, deep, out-of-range and absurd input gets 400 or 413, never a 5xx or a stored row")
    func absurdities() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(worker: false) { harness in
                try await harness.withHTTP { client in
                    let deep = String(repeating: "[", count: 100_000)
                    let cases: [(String, String, String, Set<Int>)] = [
                        ("PUT", "/v1/accounts/a/consent", #"{"consented": true, "pad": "\#(String(repeating: "x", count: 4096))"}"#, [413]),
                        ("PUT", "/v1/accounts/a/consent", deep, [400, 413]),
                        ("PUT", "/v1/accounts/\(String(repeating: "a", count: 300))/consent", #"{"consented": true}"#, [400]),
                        ("PUT", "/v1/accounts/a/consent", #"{"consented": 1e999}"#, [400]),
                        (
                            "PUT", "/v1/refund-requests/\(UUID())/answer",
                            #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true, "consumptionPercentage": 99999999999}"#, [400]
                        ),
                        (
                            "PUT", "/v1/refund-requests/\(String(repeating: "9", count: 5000))/answer",
                            #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#, [400]
                        ),
                        ("PUT", "/v1/refund-requests/\(UUID())/answer", deep, [400, 413]),
                        ("POST", "/v1/offers/promotional", #"{"accountId": "a", "offerId": "\#(String(repeating: "o", count: 5000))"}"#, [413]),
                        ("POST", "/v1/offers/promotional", #"{"accountId": "\#(String(repeating: "a", count: 200))", "offerId": "x"}"#, [400]),
                        (
                            "POST", "/v1/offers/introductory-eligibility", #"{"accountId": "a", "productId": "pro.monthly", "transactionId": "-1"}"#,
                            [400]
                        ),
                        (
                            "POST", "/v1/offers/introductory-eligibility",
                            #"{"accountId": "a", "productId": "pro.monthly", "transactionId": "\#(String(repeating: "1", count: 100))"}"#, [400]
                        ),
                        ("GET", "/v1/events?after=99999999999999999999999-1", "", [400]),
                        ("GET", "/v1/events?after=-5--5", "", [400]),
                        ("GET", "/v1/events?limit=-1", "", [400]),
                        ("GET", "/v1/events?types=\((0..<2000).map { _ in "nope.*" }.joined(separator: ","))", "", [400]),
                    ]
                    for (method, uri, body, expected) in cases {
                        let response = try await client.withKey(method == "PUT" ? .put : method == "POST" ? .post : .get, uri, body)
                        #expect(expected.contains(Int(response.status.code)), "\(method) \(uri.prefix(80)): \(response.status.code)")
                    }
                    #expect(try await harness.count("SELECT count(*) FROM consumption_consents") == 0)
                    #expect(try await harness.count("SELECT count(*) FROM offer_signatures") == 0)
                    #expect(try await client.getWithKey("/healthz").status == .ok)
                }
            }
        }
    }
}
