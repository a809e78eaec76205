import Foundation
import GooglePlay
import Subscriptions
import Testing

/// How a Play subscription that reads `EXPIRED` ended, in the words every store's subscription uses: Play voids an
/// order only when it is to be revoked (Voided Purchases API), so a whole refund of any of the current token's orders is
/// a refund — `refunded`, as an App Store `REFUND` or a Stripe refund is — and `SUBSCRIPTION_REVOKED` without one is a
/// revocation. A read names only the latest order, so the refund of a past period counts by its token.
@Suite("Play subscriptions in Storekeeper's words: in grace, refunded, revoked or expired")
struct PlayLifecycleEndTests {
    typealias Reads = PlaySubscriptionDerivationTests
    static let day = Reads.day
    static let start = Reads.start
    static let token = "t1"
    static let firstOrder = "GPA.3300-0000-0000-00001"
    static let renewal = "GPA.3300-0000-0000-00001..0"

    /// The subscription after a renewal, read `EXPIRED` on day 40 (the read names only the renewal's order).
    static func ended(revokedAt: Date?, voided: [VoidedPurchase]) throws -> SubscriptionState {
        let reads = [
            try Reads.read(token, readAt: start),
            try Reads.read(token, expires: start.addingTimeInterval(60 * day), order: renewal, readAt: start.addingTimeInterval(30 * day)),
            try Reads.read(
                token, state: "SUBSCRIPTION_STATE_EXPIRED", expires: start.addingTimeInterval(40 * day), order: renewal, autoRenew: false,
                readAt: start.addingTimeInterval(40 * day)),
        ]
        let play = try #require(
            PlaySubscriptionDerivation.derive(reads, revocations: revokedAt.map { [token: $0] } ?? [:], voided: voided).first)
        return try #require(PlayLifecycle.derive(play, account: nil)?.state)
    }

    static func void(_ order: String, token: String = token, on day: Double, partial: Bool = false) -> VoidedPurchase {
        VoidedPurchase(
            purchaseToken: token, orderId: order, voidedAt: start.addingTimeInterval(day * Self.day), quantity: partial ? 1 : nil, isPartial: partial)
    }

    @Test("a whole refund of the period in force, or of a past period no read names, is refunded (REFUND), access ended at the refund")
    func refunds() throws {
        for order in [Self.renewal, Self.firstOrder] {
            // The store counts a whole refund as the token's revocation (GoogleSubscriptionStore.revocations).
            let state = try Self.ended(revokedAt: Self.start.addingTimeInterval(39 * Self.day), voided: [Self.void(order, on: 39)])
            #expect(state.status == .refunded && state.endReason == .refund, "\(order)")
            #expect(state.revokedAt == Self.start.addingTimeInterval(39 * Self.day), "\(order): access ended at the refund")
        }
    }

    @Test("SUBSCRIPTION_REVOKED with no whole refund of the current token (none, a partial one, another token's) is revoked (REVOKE)")
    func revocations() throws {
        let revocation = Self.start.addingTimeInterval(38 * Self.day)
        for voided in [[], [Self.void(Self.renewal, on: 39, partial: true)], [Self.void("GPA.other", token: "t0", on: 39)]] {
            let state = try Self.ended(revokedAt: revocation, voided: voided)
            #expect(state.status == .revoked && state.endReason == .revoke, "\(voided)")
            #expect(state.revokedAt == revocation)
        }
    }

    @Test(
        "in grace and then on hold, expiresAt is the end of the paid period (gracePeriodExpiresAt the grace end Play moved the expiry to), as the App Store says them; access runs to the grace end, retries 60 days from the period's end either way"
    )
    func grace() throws {
        let reads = [
            try Reads.read(Self.token, readAt: Self.start),
            try Reads.read(
                Self.token, state: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", expires: Self.start.addingTimeInterval(37 * Self.day),
                readAt: Self.start.addingTimeInterval(30 * Self.day)),
        ]
        let play = try #require(PlaySubscriptionDerivation.derive(reads).first)
        let state = try #require(PlayLifecycle.derive(play, account: nil)?.state)
        #expect(state.status == .gracePeriod)
        #expect(state.expiresAt == Self.start.addingTimeInterval(30 * Self.day))
        #expect(state.gracePeriodExpiresAt == Self.start.addingTimeInterval(37 * Self.day))
        #expect(
            state.isEntitled(at: Self.start.addingTimeInterval(36 * Self.day)) && !state.isEntitled(at: Self.start.addingTimeInterval(38 * Self.day)))
        // Then on hold (Play moves the expiry back to when access ended): the paid period's end stays, and the clock
        // ends the retries 60 days after it, however the hold was reached.
        let held =
            reads + [
                try Reads.read(
                    Self.token, state: "SUBSCRIPTION_STATE_ON_HOLD", expires: Self.start.addingTimeInterval(37 * Self.day),
                    readAt: Self.start.addingTimeInterval(37 * Self.day))
            ]
        let heldPlay = try #require(PlaySubscriptionDerivation.derive(held).first)
        let onHold = try #require(PlayLifecycle.derive(heldPlay, account: nil)?.state)
        #expect(onHold.status == .billingRetry && onHold.expiresAt == Self.start.addingTimeInterval(30 * Self.day))
        #expect(onHold.nextChange(after: Self.start.addingTimeInterval(38 * Self.day)) == Self.start.addingTimeInterval(90 * Self.day))
        #expect(state.nextChange(after: Self.start.addingTimeInterval(38 * Self.day)) == Self.start.addingTimeInterval(90 * Self.day))
    }

    @Test(
        "EXPIRED with neither a revocation nor a refund is expired, not refunded: EXPIRED_BILLING_RETRY when Google cancelled it (systemInitiatedCancellation, the retries gave up), as the App Store says it; else EXPIRED_VOLUNTARY"
    )
    func expiry() throws {
        let state = try Self.ended(revokedAt: nil, voided: [])
        #expect(state.status == .expired && state.revokedAt == nil)
        for (cancellation, reason) in [("systemInitiatedCancellation", "EXPIRED_BILLING_RETRY"), ("userInitiatedCancellation", "EXPIRED_VOLUNTARY")] {
            let reads = [
                try Reads.read(Self.token, readAt: Self.start),
                try Reads.read(
                    Self.token, state: "SUBSCRIPTION_STATE_EXPIRED", expires: Self.start.addingTimeInterval(30 * Self.day), autoRenew: false,
                    readAt: Self.start.addingTimeInterval(31 * Self.day), cancellation: cancellation),
            ]
            let play = try #require(PlaySubscriptionDerivation.derive(reads).first)
            #expect(PlayLifecycle.derive(play, account: nil)?.state.endReason?.text == reason, "\(cancellation)")
        }
    }
}
