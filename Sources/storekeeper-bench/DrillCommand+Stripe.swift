import Foundation
import HostileInput
import LocalSigning
import NIOCore
import StripeStore

extension HostileDrill {
    static let stripeSecret = "whsec_drill_stripe_secret"

    /// Stripe's intake under a stranger: forged and stale signatures, a replayed event, and the costly JSON shapes
    /// under a valid signature — each answered as documented, one event stored, serve alive.
    func stripe(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let event = Array(
            #"{"id":"evt_drill_1","object":"event","created":1790000000,"livemode":false,"type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice"}}}"#
                .utf8)
        func post(_ body: [UInt8], header: String) async -> UInt? {
            await system.request(
                "/stripe/webhooks", method: .POST, headers: [("Stripe-Signature", header), ("Content-Type", "application/json")],
                body: ByteBuffer(bytes: body)
            ).status
        }
        var forged: [UInt?] = []
        for index in 0..<200 {
            forged.append(await post(event, header: StripeSignature(secrets: ["whsec_guess_\(index)"]).header(body: event, timestamp: now)))
        }
        verdict.check(forged.allSatisfy { $0 == 401 }, "200 forged Stripe signatures: all 401")
        let stale = await post(event, header: StripeSignature(secrets: [Self.stripeSecret]).header(body: event, timestamp: now - 3600))
        verdict.check(stale == 401, "a Stripe signature an hour old: 401 (got \(stale.map(String.init) ?? "none"))")
        var replays: [UInt?] = []
        for _ in 0..<50 {
            replays.append(await post(event, header: StripeSignature(secrets: [Self.stripeSecret]).header(body: event, timestamp: now)))
        }
        let stored = try await system.count("SELECT count(*) FROM stripe_events")
        verdict.check(replays.allSatisfy { $0 == 200 } && stored == 1, "one Stripe event sent 50 times: 50 × 200, stored once (\(stored))")
        let started = ContinuousClock.now
        var shapes: [UInt?] = []
        for shape in HostileShapes.all(size: 500 * 1024) {
            shapes.append(await post(shape.bytes, header: StripeSignature(secrets: [Self.stripeSecret]).header(body: shape.bytes, timestamp: now)))
        }
        let seconds = Double((ContinuousClock.now - started).components.seconds)
        verdict.check(
            shapes.allSatisfy { $0 == 400 } && seconds < 30,
            "\(shapes.count) costly JSON shapes under a valid Stripe signature: all 400 in \(Int(seconds)) s")
    }
}
