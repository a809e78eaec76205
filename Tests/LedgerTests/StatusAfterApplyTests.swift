import Credits
import Foundation
import Persistence
import Subscriptions
import Testing

/// What an apply leaves its owner, known without reading it again (sql/0054): the rows `account_status_inputs` would
/// answer, worked out here by hand from what the database keeps — a bucket that exists is kept, a row whose key is
/// posted already is skipped, a window that ended is not live, a bucket of another account is not the owner's. (The
/// scenario pipeline holds every apply's event status to the status endpoint's read: ScenarioPipelineTests.)
@Suite("Status inputs after an apply, from the snapshot and the posts")
struct StatusAfterApplyTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    static let owner = AccountID("owner-1")!
    static let day: TimeInterval = 86_400

    static func subscription(_ id: String) -> SubscriptionState {
        SubscriptionState(
            originalTransactionId: id, accountId: owner, productId: "pro.monthly", environment: .sandbox, status: .active, willRenew: true,
            autoRenewProductId: "pro.monthly", pendingProductId: nil, purchaseDate: now, expiresAt: now.addingTimeInterval(30 * day),
            gracePeriodExpiresAt: nil, isTrial: false, ownership: .purchased, latestTransactionId: id,
            lastEventType: NotificationType("DID_RENEW"), lastEvent: EventPosition(signedDate: 1_767_225_600_000, eventId: "e2"), endReason: nil,
            price: 9990)
    }

    static func cycle(_ key: String, from: TimeInterval, to: TimeInterval) -> CreditBucket {
        CreditBucket(
            key: key, meter: "ai", kind: .cycle, originalTransactionId: "s-1", billingPeriod: key, validFrom: now.addingTimeInterval(from),
            validUntil: now.addingTimeInterval(to))
    }

    @Test("a renewal: last period's bucket closed, the new one opened and granted, a top-up kept, a row posted before skipped")
    func renewal() throws {
        let last = Self.cycle("cycle:s-1:p1", from: -30 * Self.day, to: 30 * Self.day)
        let topUp = CreditBucket(
            key: "topup:t-1", meter: "ai", kind: .topUp, accountId: Self.owner, validFrom: Self.now.addingTimeInterval(-Self.day), validUntil: nil)
        let ledger = LedgerSnapshot(
            buckets: [last, topUp],
            entries: [
                LedgerEntry(operationKey: "grant:p1", bucket: last.key, delta: 1000, reason: "grant"),
                LedgerEntry(operationKey: "usage:a", bucket: last.key, delta: -40, reason: "usage"),
                LedgerEntry(operationKey: "topup:t-1", bucket: topUp.key, delta: 500, reason: "top-up"),
            ])
        // Opened with a time finer than a microsecond: stored to the microsecond, read to the millisecond.
        let next = Self.cycle("cycle:s-1:p2", from: 0.000_700_4, to: 30 * Self.day)
        let operations: [LedgerOperation] = [
            .setWindowEnd(bucket: last.key, end: Self.now.addingTimeInterval(-60)),
            .post(LedgerEntry(operationKey: "expire:p1", bucket: last.key, delta: -960, reason: "expired"), opening: nil),
            .post(LedgerEntry(operationKey: "grant:p2", bucket: next.key, delta: 1000, reason: "grant"), opening: next),
            // Posted already (another apply got there first): the database skipped it.
            .post(LedgerEntry(operationKey: "topup:t-1", bucket: topUp.key, delta: 500, reason: "top-up"), opening: nil),
        ]
        #expect(CreditLedger.StatusInputs.canFollow(operations, of: "s-1", in: ledger, at: Self.now))
        let inputs = CreditLedger.StatusInputs.after(
            Self.subscription("s-1"), of: Self.owner, in: ledger, posting: operations, posted: ["expire:p1", "grant:p2"], at: Self.now)
        #expect(inputs.subscriptions.map(\.originalTransactionId) == ["s-1"])
        #expect(inputs.records.isEmpty && inputs.holds.isEmpty)
        // Spend order: cycle credits before top-ups; the ended window is gone.
        #expect(inputs.buckets.map(\.bucket.key) == ["cycle:s-1:p2", "topup:t-1"])
        #expect(inputs.buckets.map(\.balance) == [1000, 500])
        #expect(inputs.buckets.first?.bucket.validFrom == Self.now.addingTimeInterval(0.001).wholeMilliseconds)
    }

    @Test("a bucket already stored is kept as stored, and a bucket of another account is not the owner's")
    func keptAndForeign() throws {
        let stored = Self.cycle("cycle:s-1:p1", from: -Self.day, to: 29 * Self.day)
        let foreign = CreditBucket(
            key: "topup:other", meter: "ai", kind: .topUp, accountId: AccountID("other")!, validFrom: Self.now.addingTimeInterval(-Self.day),
            validUntil: nil)
        let ledger = LedgerSnapshot(
            buckets: [stored, foreign], entries: [LedgerEntry(operationKey: "grant:p1", bucket: stored.key, delta: 300, reason: "grant")])
        var reopened = stored
        reopened.validUntil = Self.now.addingTimeInterval(99 * Self.day)
        let operations: [LedgerOperation] = [
            .post(LedgerEntry(operationKey: "grant:p1:b", bucket: stored.key, delta: 7, reason: "grant"), opening: reopened)
        ]
        let inputs = CreditLedger.StatusInputs.after(
            Self.subscription("s-1"), of: Self.owner, in: ledger, posting: operations, posted: ["grant:p1:b"], at: Self.now)
        #expect(inputs.buckets.map(\.bucket.key) == ["cycle:s-1:p1"])
        #expect(inputs.buckets.first?.bucket.validUntil == stored.validUntil)
        #expect(inputs.buckets.map(\.balance) == [307])
    }

    @Test("a bucket of the owner's own that the snapshot lacks can only be read: it may exist without being live now")
    func ownBucketUnknown() {
        let ledger = LedgerSnapshot(buckets: [Self.cycle("cycle:s-1:p1", from: -Self.day, to: 29 * Self.day)])
        let daily = CreditBucket(
            key: "daily:owner-1:2026-01-01", meter: "ai", kind: .daily, accountId: Self.owner, validFrom: Self.now,
            validUntil: Self.now.addingTimeInterval(Self.day))
        let own: [LedgerOperation] = [.post(LedgerEntry(operationKey: "daily", bucket: daily.key, delta: 5, reason: "daily"), opening: daily)]
        #expect(!CreditLedger.StatusInputs.canFollow(own, of: "s-1", in: ledger, at: Self.now))
        // Another subscription's bucket is no more knowable (the apply of one subscription opens none).
        let other = Self.cycle("cycle:s-2:p1", from: 0, to: Self.day)
        var foreign = other
        foreign.originalTransactionId = "s-2"
        let opened: [LedgerOperation] = [.post(LedgerEntry(operationKey: "g", bucket: foreign.key, delta: 5, reason: "grant"), opening: foreign)]
        #expect(!CreditLedger.StatusInputs.canFollow(opened, of: "s-1", in: ledger, at: Self.now))
        // The subscription's own new bucket is new: the snapshot holds every one of them.
        let next = Self.cycle("cycle:s-1:p2", from: 29 * Self.day, to: 59 * Self.day)
        let own2: [LedgerOperation] = [.post(LedgerEntry(operationKey: "g2", bucket: next.key, delta: 5, reason: "grant"), opening: next)]
        #expect(CreditLedger.StatusInputs.canFollow(own2, of: "s-1", in: ledger, at: Self.now))
        // A row to that bucket without its opening, later in the same apply (a refund's removal of a period granted in
        // the same pass), is known too; a row to a bucket neither held nor opened — a former owner's top-up, given back
        // a claw-back's take — is not, and its posts are not deferred as this owner's.
        let removal = LedgerOperation.post(LedgerEntry(operationKey: "refund:1:g2", bucket: next.key, delta: -5, reason: "refund"), opening: nil)
        #expect(CreditLedger.StatusInputs.canFollow(own2 + [removal], of: "s-1", in: ledger, at: Self.now))
        let givenBack = LedgerOperation.post(
            LedgerEntry(operationKey: "reversed:clawback:p0:1:topup:former:ai", bucket: "topup:former:ai", delta: 3, reason: "refund reversed"),
            opening: nil)
        #expect(!CreditLedger.StatusInputs.canFollow([givenBack], of: "s-1", in: ledger, at: Self.now))
        #expect(!CreditLedger.StatusInputs.canFollow(own2 + [givenBack], of: "s-1", in: ledger, at: Self.now))
        // A window ending within a millisecond of the apply's instant: the read compares microseconds, a bucket read
        // back has milliseconds, so only the read can say whether it is still live.
        let closing: [LedgerOperation] = [.setWindowEnd(bucket: "cycle:s-1:p1", end: Self.now.addingTimeInterval(0.0004))]
        #expect(!CreditLedger.StatusInputs.canFollow(closing, of: "s-1", in: ledger, at: Self.now))
        let ending = LedgerSnapshot(buckets: [Self.cycle("cycle:s-1:p1", from: -Self.day, to: -0.0002)])
        #expect(!CreditLedger.StatusInputs.canFollow([], of: "s-1", in: ending, at: Self.now))
    }
}
