import Entitlements
import Events
import Foundation
import Subscriptions
import Testing

/// The events of grants and one-time purchases, written from what an app's service must hear: one `started` when the
/// source begins to count, one `ended` when it stops, `started` again only when it comes back (a reversed refund) —
/// never again because the event store forgot (it deletes events after the retention window) or because the store
/// signed a new version of the same purchase.
@Suite struct SourceChangesTests {
    static let account = AccountID("acct-lifetime")!
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func record(version: Int64) -> EntitlementRecord {
        EntitlementRecord(
            id: "2000000123", kind: .purchase, store: .appStore, productId: "pro.lifetime", startsAt: start, environment: .sandbox,
            signedDate: version)
    }

    static func source(_ status: SourceStatus) -> EntitlementSource {
        EntitlementSource(
            id: "2000000123", kind: .lifetime, store: .appStore, productId: "pro.lifetime", tier: "pro", level: 1, group: nil, startsAt: start,
            expiresAt: nil, status: status, entitled: status == .active, willRenew: false)
    }

    static let endings: [SourceStatus] = [.expired, .refunded, .revoked, .ended]

    @Test("each status against what was announced before: started once, ended once, started again only after an end; nothing before the start")
    func everyStatusAgainstEveryAnnouncement() {
        let record = Self.record(version: 1)
        for announced in [nil] + SourceAnnouncement.allCases.map(Optional.some) {
            let types = { (status: SourceStatus) in
                SourceChanges.changes(record, source: Self.source(status), account: Self.account, announced: announced).map(\.type)
            }
            #expect(types(.scheduled).isEmpty, "\(String(describing: announced))")
            #expect(types(.active) == (announced == .started ? [] : [.purchaseStarted]), "\(String(describing: announced))")
            for ending in Self.endings {
                let expected: [EventType] =
                    switch announced {
                    case nil: [.purchaseStarted, .purchaseEnded]
                    case .started: [.purchaseEnded]
                    case .ended: []
                    }
                #expect(types(ending) == expected, "\(ending.text) after \(String(describing: announced))")
            }
        }
    }

    @Test(
        "a lifetime settled every month for two years with the event store emptied each time, refunded as a new version, settled again, the refund reversed: started, ended, started"
    )
    func historyOutlivesTheEventStore() {
        var announced: SourceAnnouncement?
        var sent: [EventType] = []
        func settle(_ status: SourceStatus, version: Int64) {
            let source = Self.source(status)
            let drafts = SourceChanges.changes(Self.record(version: version), source: source, account: Self.account, announced: announced)
            sent += drafts.map(\.type)
            if let now = SourceChanges.announcement(of: source) { announced = now }
        }
        for _ in 0..<24 { settle(.active, version: 1) }
        settle(.refunded, version: 2)
        settle(.refunded, version: 2)
        settle(.refunded, version: 3)
        settle(.active, version: 4)
        settle(.active, version: 4)
        #expect(sent == [.purchaseStarted, .purchaseEnded, .purchaseStarted])
        #expect(SourceChanges.announcement(of: Self.source(.scheduled)) == nil)
    }
}
