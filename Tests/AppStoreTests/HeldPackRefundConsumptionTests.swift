import AppStoreModels
import Foundation
import LocalSigning
import TestSupport
import Testing

@testable import IntegrationSupport

/// What Apple is told of a second pack when the first was refunded while a model call held all its credits. The refund
/// takes 100 credits back from the pool: the first pack's are held, so it takes the second's. The work then used the
/// first pack's credits, not the second's, whichever of the refund and the hold's end reached the server first.
/// Expectations from what the customer's work used of each pack, checked on the body the fake Apple received.
@Suite("A pack refunded while its credits are held: Apple hears what the work used of the other pack, in either order")
struct HeldPackRefundConsumptionTests {
    @Test(
        "pack A's 100 held, pack B bought, A refunded by Apple, the hold settled for 100 or 40 — the refund first or the settle first: B answered 0 % used; 30 spent after: 30 %",
        arguments: [(Int64(100), true), (100, false), (40, true), (40, false)])
    func otherPack(charge: Int64, refundFirst: Bool) async throws {
        try await ClawBackConsumptionTests.afterAPack { flow, apple, account, _, packA in
            let hold = try await ClawBackConsumptionTests.hold(100, for: account, client: flow.client)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let packB = try await RefundDefenceTests.buyPack("7200002", for: account, signedDate: now - 30_000, through: flow, knownTo: apple)
            #expect(try await ClawBackConsumptionTests.remaining(flow.client, account) == 100)
            let client = flow.client
            let settle = {
                let settled = try await ClawBackConsumptionTests.post(client, "/v1/holds/\(hold)/settle", #"{"amount": \#(charge)}"#)
                #expect(settled.status == .ok, "\(String(buffer: settled.body))")
            }
            if !refundFirst { try await settle() }
            try await Self.refund(packA, signedDate: now - 20_000, through: flow)
            if refundFirst { try await settle() }
            // 200 bought, 100 refunded, the work's charge: what is left is B's.
            #expect(try await ClawBackConsumptionTests.remaining(flow.client, account) == 100 - charge)
            #expect(try await ClawBackConsumptionTests.consumption(of: packB, asked: 1, flow: flow, apple: apple) == 0)
            guard charge <= 70 else { return }
            #expect(try await flow.client.spend(account, amount: 30, key: "after").status == .ok)
            #expect(try await ClawBackConsumptionTests.consumption(of: packB, asked: 2, flow: flow, apple: apple) == 30_000)
        }
    }

    @Test(
        "pack A's 100 held; B bought, A refunded (it takes B's); C bought, B refunded (it takes C's); the hold released and 100 spent: C answered 100 % used, as had the hold ended first"
    )
    func chainOfRefunds() async throws {
        try await ClawBackConsumptionTests.afterAPack { flow, apple, account, _, packA in
            let hold = try await ClawBackConsumptionTests.hold(100, for: account, client: flow.client)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let packB = try await RefundDefenceTests.buyPack("7200002", for: account, signedDate: now - 50_000, through: flow, knownTo: apple)
            try await Self.refund(packA, signedDate: now - 40_000, through: flow)
            let packC = try await RefundDefenceTests.buyPack("7200003", for: account, signedDate: now - 30_000, through: flow, knownTo: apple)
            try await Self.refund(packB, signedDate: now - 20_000, through: flow)
            #expect(try await ClawBackConsumptionTests.remaining(flow.client, account) == 0)
            #expect(try await ClawBackConsumptionTests.post(flow.client, "/v1/holds/\(hold)/release", "").status == .ok)
            #expect(try await ClawBackConsumptionTests.remaining(flow.client, account) == 100)
            #expect(try await flow.client.spend(account, amount: 100, key: "after").status == .ok)
            #expect(try await ClawBackConsumptionTests.consumption(of: packC, asked: 1, flow: flow, apple: apple) == 100_000)
        }
    }

    /// Apple's REFUND of a pack: the transaction with its revocation, signed at `signedDate`.
    static func refund(_ pack: TransactionPayload, signedDate: Int64, through flow: LifecycleFlow) async throws {
        var refunded = pack
        refunded.signedDate = signedDate
        refunded.revocationDate = signedDate
        refunded.revocationReason = 0
        try await flow.post(
            SimulatedEvent(notificationType: "REFUND", subtype: nil, status: nil, signedDate: signedDate, transaction: refunded, renewalInfo: nil))
    }
}
