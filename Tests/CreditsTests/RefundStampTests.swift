import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// A refund of the period in force that finds its window with nothing left — all of it held — marks it with two rows
/// that net to nothing (since 2026-12-05; before, it posted none); sql/0060 names its removal's key from the
/// subscription as stored (`billing_period`, `revoked_at`), sql/0059 from the mark, and a hold's end posts the refund's
/// take of what comes back under it. That works only if the stored state names exactly the stamp the credit rules give
/// the refund (`SubscriptionCredits.refundStamp`), the mark's: checked here with the rules alone, for
/// each kind of App Store revocation of the period in force, by what the customer sees — while the refund stands the
/// window holds nothing and a later derivation posts nothing; once it is reversed the window holds 10 less the 3
/// charged, as it would had the hold ended before the refund.
@Suite("A refund that found its window empty: the stamp the stored state names is the rules'")
struct RefundStampTests {
    enum Revocation: CaseIterable {
        /// `REFUND` with `REFUND_FULL`.
        case refund
        /// `REVOKE` with `FAMILY_REVOKE`.
        case familyRevoke
        /// `REFUND` with `REFUND_PRORATED` at 50 %: of the period in force, the rules take all that is left.
        case proratedInForce
        /// Refunded, then refunded again at a later date (a second signed copy with another `revocationDate`).
        case redated
    }

    typealias World = ClawBackClaimsTests.World
    static let hour: Int64 = 3_600_000

    /// This month's period (ClawBackClaimsTests's period 1) revoked at `at`, as Apple signs it.
    static func revoked(_ kind: Revocation, at: Int64) -> SubscriptionEvent {
        var event = ClawBackClaimsTests.period(1, signed: at)
        event.id = "revoked-\(at)"
        event.notificationType = kind == .familyRevoke ? "REVOKE" : "REFUND"
        event.subtype = nil
        event.appleStatus = 5
        event.transaction.revocationDate = at
        event.transaction.revocationReason = kind == .familyRevoke ? nil : 0
        event.transaction.revocationType = kind == .familyRevoke ? "FAMILY_REVOKE" : kind == .proratedInForce ? "REFUND_PRORATED" : "REFUND_FULL"
        event.transaction.revocationPercentage = kind == .proratedInForce ? 50_000 : nil
        return event
    }

    /// This month's refund reversed at `at`: its transaction signed again without the revocation (`REFUND_REVERSED`).
    static func reversed(at: Int64) -> SubscriptionEvent {
        var reversal = ClawBackClaimsTests.period(1, signed: at)
        reversal.id = "reversed-\(at)"
        reversal.notificationType = "REFUND_REVERSED"
        reversal.subtype = nil
        return reversal
    }

    /// The key sql/0060 names from the stored state: `refund:<billing_period>:<revoked_at in ms>:<bucket>`.
    static func storedKey(_ state: SubscriptionState, window: String) throws -> String {
        let revokedAt = try #require(state.revokedAt, "a revoked period in force stores its date")
        return "refund:\(state.billingPeriodKey):\(Int64((revokedAt.timeIntervalSince1970 * 1000).rounded())):\(window)"
    }

    @Test(
        "all 10 of this month's window held, the month refunded or revoked, the hold settled for 3: nothing in the window and nothing more due while it stands, 7 once reversed",
        arguments: Revocation.allCases)
    func takeUnderTheStoredStamp(kind: Revocation) throws {
        let renewed = World.renewed()
        var world = renewed.world
        let renewedAt = renewed.renewedAt
        let now = ClawBackClaimsTests.date(renewedAt + ClawBackClaimsTests.day)
        let window = try #require(world.live(at: now).first { $0.key.hasPrefix("cycle:") })
        #expect(window.balance == 10)
        let debits = world.take("hold:h", 10, at: now)
        let refundedAt = renewedAt + 2 * ClawBackClaimsTests.day
        world.deliver(Self.revoked(kind, at: refundedAt), now: ClawBackClaimsTests.date(refundedAt))
        // Nothing left to take: the refund marks the window with two rows that net to nothing (credits out, 10).
        let marks = world.ledger.entries(of: window.key).filter { $0.operationKey.hasPrefix("refund:") }
        #expect(marks.map(\.delta) == [10, -10] && marks.first?.operationKey.hasSuffix(":pending") == true, "\(kind): \(marks)")
        #expect(world.ledger.balance(of: window.key) == 0)
        var state = try #require(world.derivation?.state)
        if kind == .redated {
            let later = refundedAt + Self.hour
            world.deliver(Self.revoked(.refund, at: later), now: ClawBackClaimsTests.date(later))
            state = try #require(world.derivation?.state)
            #expect(state.revokedAt == ClawBackClaimsTests.date(later))
        }
        // The hold's end, as its group writes it with sql/0060's read of the window: closed, refunded under the key the
        // stored state names, still the account's.
        let key = try Self.storedKey(state, window: window.key)
        // The same key sql/0059 finds in the ledger, the window's first refund row that takes and stands: the two reads
        // name one refund, whichever the read returns.
        let standing = world.ledger.entries(of: window.key).first {
            $0.operationKey.hasPrefix("refund:") && $0.delta < 0 && !world.ledger.isPosted("reversed:\($0.operationKey)")
        }
        #expect(standing?.operationKey == key, "\(kind): \(String(describing: standing))")
        let since = [
            CreditHold.BucketSince(
                bucket: window.key, kind: "cycle", open: false, refunded: true, refundedBy: key, owner: ClawBackClaimsTests.account.text)
        ]
        let destinations = CreditHold.destinations(since, open: [], account: ClawBackClaimsTests.account)
        let outcome = try #require(HoldSettlement.settle(debits, charge: 3, destination: { destinations[$0] }, claims: { _ in [] }))
        let hold = CreditHold(
            id: UUID(), account: ClawBackClaimsTests.account, idempotencyKey: "h", meter: "ai", amount: 10, debits: debits, createdAt: now,
            expiresAt: now)
        let takes = CreditHold.refundTakes(
            of: outcome, debits: debits, since: since, account: ClawBackClaimsTests.account, key: { CreditHold.returnKey(hold.id, $0) })
        #expect(takes.map(\.delta) == [-7], "\(kind): the refund takes the 7 that came back")
        for entry in CreditHold.endEntries(of: hold, outcome: outcome) + takes { world.ledger.apply(.post(entry, opening: nil)) }
        #expect(world.ledger.balance(of: window.key) == 0, "\(kind): the window while the refund stands")
        // Derived again (a duplicate, a renewal check, `replay`): the take is the refund's own, nothing is due.
        let derivation = try #require(world.derivation)
        let due = SubscriptionCredits.operationsDue(
            derivation, catalogue: ClawBackClaimsTests.catalogue, ledger: world.ledger, now: ClawBackClaimsTests.date(refundedAt + 2 * Self.hour))
        #expect(due.isEmpty, "\(kind): \(due)")
        // Reversed: the transaction signed again without its revocation.
        let reversedAt = refundedAt + ClawBackClaimsTests.day
        world.deliver(Self.reversed(at: reversedAt), now: ClawBackClaimsTests.date(reversedAt))
        #expect(world.derivation?.state.revokedAt == nil)
        #expect(world.ledger.balance(of: window.key) == 7, "\(kind): 10 less the 3 charged, as had the hold ended first")
        #expect(world.live(at: ClawBackClaimsTests.date(reversedAt)).first { $0.key == window.key }?.balance == 7, "\(kind): spendable again")
    }
}
