import AppStoreModels
import Foundation
import TestSupport
import Testing

@testable import Subscriptions

/// Generates plausible histories of one subscription as Apple would notify them: purchases, renewals, plan changes,
/// failures and recoveries, refunds (current and earlier periods) and reversals, extensions, price increases,
/// expiries and resubscriptions, types Apple may add — with signed dates that sometimes coincide.
struct HistoryGenerator {
    var random: SplitMix64
    let factory = EventFactory()

    private enum Phase { case active, grace, retry, refunded, ended }

    mutating func history() -> [SubscriptionEvent] {
        let day = factory.day
        var clock = factory.start
        var period = 0
        var product = "pro.monthly"
        var periodStart = clock
        var periodEnd = clock + 30 * day
        var pending: String?
        var autoRenew: Int32 = 1
        var phase = Phase.active
        var events: [SubscriptionEvent] = []

        func emit(
            _ type: String, _ subtype: String? = nil, status: Int32, of transactionPeriod: Int? = nil,
            revoked: Bool = false, grace: Int64? = nil, offerType: Int32? = nil, priceIncrease: Int32? = nil,
            intent: Int32? = nil
        ) {
            let of = transactionPeriod ?? period
            events.append(
                factory.event(
                    type, subtype, signedAt: clock, period: of, status: status, autoRenew: autoRenew, product: product,
                    autoRenewProduct: pending ?? product, expirationIntent: intent, gracePeriodEnd: grace,
                    offerType: offerType, revocationDate: revoked ? clock : nil, revocationType: revoked ? "REFUND_FULL" : nil,
                    purchaseDate: of == period ? periodStart : factory.start + Int64(of) * 30 * day,
                    expiresDate: of == period ? periodEnd : factory.start + Int64(of + 1) * 30 * day,
                    priceIncreaseStatus: priceIncrease))
        }
        func newPeriod(from start: Int64) {
            period += 1
            periodStart = start
            periodEnd = start + 30 * day
        }

        emit("SUBSCRIBED", "INITIAL_BUY", status: 1, offerType: Bool.random(using: &random) ? 1 : nil)
        for _ in 0..<Int.random(in: 4...14, using: &random) {
            // Apple signs some notifications in the same millisecond.
            clock += Int.random(in: 0..<8, using: &random) == 0 ? 0 : Int64.random(in: 1...(3 * day), using: &random)
            switch phase {
            case .active:
                switch Int.random(in: 0..<13, using: &random) {
                case 0, 1:
                    if let target = pending { product = target; pending = nil }
                    newPeriod(from: periodEnd)
                    clock = max(clock, periodStart - day)
                    emit("DID_RENEW", status: 1)
                case 2:
                    autoRenew = 1 - autoRenew
                    emit("DID_CHANGE_RENEWAL_STATUS", autoRenew == 1 ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED", status: 1)
                case 3:
                    pending = pending == nil ? "basic.monthly" : nil
                    emit("DID_CHANGE_RENEWAL_PREF", pending == nil ? nil : "DOWNGRADE", status: 1)
                case 4:
                    product = "max.monthly"
                    pending = nil
                    newPeriod(from: clock)
                    emit("DID_CHANGE_RENEWAL_PREF", "UPGRADE", status: 1)
                case 5:
                    let withGrace = Bool.random(using: &random)
                    phase = withGrace ? .grace : .retry
                    emit("DID_FAIL_TO_RENEW", withGrace ? "GRACE_PERIOD" : nil, status: withGrace ? 4 : 3, grace: withGrace ? periodEnd + 6 * day : nil)
                case 6:
                    phase = .refunded
                    emit("REFUND", status: 5, revoked: true)
                case 7 where period > 0:
                    emit("REFUND", status: 1, of: period - 1, revoked: true)
                case 8:
                    periodEnd += 7 * day
                    emit("RENEWAL_EXTENDED", status: 1)
                case 9:
                    emit("PRICE_INCREASE", Bool.random(using: &random) ? "PENDING" : "ACCEPTED", status: 1, priceIncrease: Int32.random(in: 0...1, using: &random))
                case 10:
                    phase = .ended
                    autoRenew = 0
                    emit("EXPIRED", "VOLUNTARY", status: 2, intent: 1)
                case 11:
                    emit("OFFER_REDEEMED", status: 1, offerType: 2)
                default:
                    emit("METADATA_UPDATE", status: 1)
                }
            case .grace, .retry:
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    phase = .active
                    newPeriod(from: clock)
                    emit("DID_RENEW", "BILLING_RECOVERY", status: 1)
                case 1 where phase == .grace:
                    phase = .retry
                    emit("GRACE_PERIOD_EXPIRED", status: 3)
                default:
                    phase = .ended
                    autoRenew = 0
                    emit("EXPIRED", "BILLING_RETRY", status: 2, intent: 2)
                }
            case .refunded:
                if Bool.random(using: &random) {
                    phase = .active
                    emit("REFUND_REVERSED", status: 1)
                } else {
                    phase = .active
                    autoRenew = 1
                    newPeriod(from: clock)
                    emit("SUBSCRIBED", "RESUBSCRIBE", status: 1)
                }
            case .ended:
                phase = .active
                autoRenew = 1
                newPeriod(from: clock)
                let winBack = Bool.random(using: &random)
                emit(winBack ? "OFFER_REDEEMED" : "SUBSCRIBED", "RESUBSCRIBE", status: 1, offerType: winBack ? 4 : nil)
            }
        }
        return events
    }
}

/// The archive the persistence layer keeps, as a pure projection of effects (mirrors `SubscriptionArchive`).
struct ArchiveModel: Equatable {
    var rows: [String: Bool] = [:]  // "transactionId/reason" → reinstated

    mutating func record(_ effects: [LifecycleEffect]) {
        for effect in effects {
            switch effect {
            case .ended(let reason, let transactionId, _):
                if rows["\(transactionId)/\(reason)"] == nil { rows["\(transactionId)/\(reason)"] = false }
            case .refundReversed(let transactionId):
                if rows["\(transactionId)/REFUND"] == false { rows["\(transactionId)/REFUND"] = true }
            case .periodStarted, .periodExtended, .earlierPeriodRefunded, .recheckRenewal:
                continue
            }
        }
    }
}

@Suite("Order independence")
struct OrderIndependenceTests {
    let now = Date(timeIntervalSince1970: 1_767_225_600)

    /// Delivers `events` in the given order the way the worker does; returns the state and archive.
    func deliver(_ events: [SubscriptionEvent]) -> (SubscriptionState?, ArchiveModel) {
        var state: SubscriptionState?
        var archive = ArchiveModel()
        var delivered: [SubscriptionEvent] = []
        for event in events {
            delivered.append(event)
            var decision = Lifecycle.apply(event, to: state, now: now)
            if decision.outcome == .outOfOrder {
                decision = Lifecycle.replay(delivered, now: now)
                archive = ArchiveModel()
            }
            state = decision.state
            archive.record(decision.effects)
        }
        return (state, archive)
    }

    @Test("generated histories: 1,000 permutations each, with duplicates, end in the in-order state and archive", arguments: 0..<20)
    func permutations(seed: Int) {
        var generator = HistoryGenerator(random: SplitMix64(state: UInt64(seed) &* 7919 &+ 17))
        let history = generator.history()
        let inOrder = history.sorted { $0.position < $1.position }
        let expected = deliver(inOrder)
        #expect(expected.0 != nil)
        #expect(Lifecycle.replay(history.shuffled(using: &generator.random), now: now).state == expected.0)
        var random = generator.random
        for _ in 0..<1_000 {
            let duplicates = history.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
            let delivery = (history + duplicates).shuffled(using: &random)
            let result = deliver(delivery)
            #expect(result.0 == expected.0, "seed \(seed)")
            #expect(result.1 == expected.1, "seed \(seed)")
            if result.0 != expected.0 || result.1 != expected.1 { return }
        }
    }
}
