import AppStoreModels
import Foundation
import TestSupport
import Testing

@testable import Subscriptions

/// Facts merge as "newest version per key", so a subscription's derived state cannot depend on delivery order. The
/// generator writes histories as Apple sends them — renewals, failures, upgrades — and adds what the old model got
/// wrong: notifications about earlier transactions (refunds, consumption requests, declines), restored copies of a
/// period, later `isUpgraded` copies of a superseded transaction and client claims of old copies.
@Suite("Derived state is independent of delivery order")
struct FactOrderTests {
    let factory = EventFactory()

    /// One random history of one subscription.
    func history(_ random: inout SplitMix64) -> [SubscriptionEvent] {
        let day = factory.day
        var events = [factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start + 60_000)]
        var periods = 1
        var product = "pro.monthly"
        for step in 0..<Int.random(in: 1...8, using: &random) {
            let at = factory.start + Int64(30 * periods) * day + Int64(step) * 3_600_000
            switch Int.random(in: 0..<7, using: &random) {
            case 0:
                events.append(factory.event("DID_RENEW", signedAt: at, period: periods, product: product))
                periods += 1
            case 1:
                let earlier = Int.random(in: 0..<periods, using: &random)
                events.append(
                    factory.event(
                        "REFUND", signedAt: at, period: earlier, product: product, revocationDate: at - 1000,
                        revocationType: "REFUND_FULL"))
            case 2:
                let earlier = Int.random(in: 0..<periods, using: &random)
                events.append(
                    factory.event(
                        ["CONSUMPTION_REQUEST", "REFUND_DECLINED"].randomElement(using: &random)!, signedAt: at, period: earlier, product: product))
            case 3:
                // An immediate upgrade mid-period, and a later signed copy of the superseded transaction.
                let upgradeAt = factory.start + Int64(30 * (periods - 1)) * day + 10 * day
                events.append(
                    factory.event(
                        "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signedAt: max(at, upgradeAt), period: periods, product: "max.monthly",
                        purchaseDate: upgradeAt, expiresDate: upgradeAt + 30 * day))
                var copy = factory.event("CONSUMPTION_REQUEST", signedAt: max(at, upgradeAt) + 5_000, period: periods - 1, product: product)
                copy.transaction.isUpgraded = true
                events.append(copy)
                product = "max.monthly"
                periods += 1
            case 4:
                // A restored copy of the newest period: a new transactionId, the same webOrderLineItemId.
                var restored = factory.event("CLIENT_TRANSACTION", signedAt: at, period: periods - 1, product: product, renewalInfo: false)
                restored.transaction.webOrderLineItemId = restored.transaction.transactionId
                restored.transaction.transactionId += "-restored"
                var original = factory.event("DID_RENEW", signedAt: at - 2_000, period: periods - 1, product: product)
                original.transaction.webOrderLineItemId = original.transaction.transactionId
                events.append(original)
                if let claim = SubscriptionEvent(claimOf: restored.transaction, by: AccountID(factory.account)) { events.append(claim) }
            case 5:
                events.append(
                    factory.event(
                        "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: at, period: periods - 1, status: 4, product: product,
                        gracePeriodEnd: at + 6 * day))
            default:
                let old = Int.random(in: 0..<periods, using: &random)
                let copy = factory.event("CLIENT_TRANSACTION", signedAt: at, period: old, product: product, renewalInfo: false)
                if let claim = SubscriptionEvent(claimOf: copy.transaction, by: AccountID(factory.account)) { events.append(claim) }
            }
        }
        return events
    }

    @Test("1,000 random histories: every shuffle with duplicates derives the in-order state")
    func shuffledHistories() async {
        var random = SplitMix64(state: 0x5eed_f4c7)
        for round in 0..<1000 {
            let events = history(&random)
            let reference = factory.derived(events)
            #expect(reference != nil)
            for _ in 0..<5 {
                var delivered = events.shuffled(using: &random)
                for _ in 0..<Int.random(in: 0...3, using: &random) { delivered.append(events.randomElement(using: &random)!) }
                delivered.shuffle(using: &random)
                #expect(factory.derived(delivered) == reference, "history \(round)")
            }
            if round % 100 == 0 { await Task.yield() }
        }
    }

    /// Applying skips the archive's reinstatement unless a fact mentions a revocation
    /// (``SubscriptionEvent/mentionsRevocation``): that is sound only if no set of facts without one ever derives a
    /// refund or revocation end. Facts only grow, so every prefix of a history is a set an earlier apply derived.
    @Test("a refund or revocation end is derived only from facts that mention a revocation (every prefix of 1,000 random histories)")
    func revocationEndsNeedRevocationFacts() async {
        var random = SplitMix64(state: 0x7e40_ca7e)
        var refundEnds = 0
        for round in 0..<1000 {
            let events = history(&random)
            for count in 1...events.count {
                let facts = Array(events.prefix(count))
                guard let derivation = SubscriptionFacts(events: facts).flatMap({ Lifecycle.derive($0) }),
                    derivation.ends.contains(where: \.reason.removesCredits)
                else { continue }
                refundEnds += 1
                #expect(facts.contains { $0.mentionsRevocation }, "history \(round), first \(count) events")
            }
            if round % 100 == 0 { await Task.yield() }
        }
        #expect(refundEnds > 100)
    }

    @Test(
        "the owner is the newest ownership fact, and ownerClaimed says whether that is the app's claim: a purchase's token is not, a later claim is, a purchase under a new token after the claim is not"
    )
    func ownerClaimed() throws {
        let day = factory.day
        let subscribed = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start)
        var renewed = factory.event("DID_RENEW", signedAt: factory.start + 31 * day, period: 1)
        renewed.transaction.signedDate = factory.start + 31 * day
        let claimant = try #require(AccountID("a-claimant"))
        var claimed = renewed.transaction
        claimed.signedDate = factory.start + 40 * day
        let claim = try #require(SubscriptionEvent(claimOf: claimed, by: claimant))
        var resubscribed = factory.event("DID_RENEW", signedAt: factory.start + 62 * day, period: 2)
        resubscribed.transaction.appAccountToken = UUID().uuidString.lowercased()
        func owner(_ events: [SubscriptionEvent]) -> (String?, Bool?) {
            let derivation = SubscriptionFacts(events: events).flatMap { Lifecycle.derive($0) }
            return (derivation?.state.accountId?.text, derivation?.ownerClaimed)
        }
        #expect(owner([subscribed, renewed]) == (factory.account.uuidString.lowercased(), false))
        #expect(owner([subscribed, renewed, claim]) == ("a-claimant", true))
        let (after, claimedAfter) = owner([subscribed, renewed, claim, resubscribed])
        #expect(after == resubscribed.transaction.appAccountToken && claimedAfter == false)
    }

    @Test("a reversed refund leaves no refund end, and its facts still mention the revocation; a revoke mentions it too")
    func reversedRefundStillMentionsRevocation() {
        let day = factory.day
        let subscribed = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start)
        let refund = factory.event("REFUND", signedAt: factory.start + 10 * day, revocationDate: factory.start + 10 * day)
        let reversed = factory.event("REFUND_REVERSED", signedAt: factory.start + 12 * day)
        let revoke = factory.event("REVOKE", signedAt: factory.start + 10 * day, ownership: "FAMILY_SHARED")
        func ends(_ events: [SubscriptionEvent]) -> [Lifecycle.End] {
            SubscriptionFacts(events: events).flatMap { Lifecycle.derive($0) }?.ends ?? []
        }
        #expect(ends([subscribed, refund]).contains { $0.reason.removesCredits })
        #expect(!ends([subscribed, refund, reversed]).contains { $0.reason.removesCredits })
        #expect([subscribed, refund, reversed].contains { $0.mentionsRevocation })
        #expect(![subscribed, reversed].contains { $0.mentionsRevocation })
        #expect(revoke.mentionsRevocation)
    }

    @Test("a refund of an earlier period never changes the period in force")
    func earlierRefund() {
        let day = factory.day
        let subscribed = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start)
        let renewed = factory.event("DID_RENEW", signedAt: factory.start + 30 * day, period: 1)
        let refund = factory.event("REFUND", signedAt: factory.start + 40 * day, period: 0, revocationDate: factory.start + 40 * day)
        let state = factory.derived([subscribed, renewed, refund])
        #expect(state?.status == .active)
        #expect(state?.latestTransactionId == "2000000000000001-1")
        #expect(state?.isEntitled(at: factory.date(factory.start + 45 * day)) == true)
    }
}
