import Entitlements
import Foundation
import Testing

/// The account-level rule, from `docs/credits.md` ("Entitlement sources"): entitled when any source entitles; the tier
/// of the highest level decides (1 is highest), ties to the source that lasts longest, then by id; two entitling
/// auto-renewing sources of one group overlap. No database: sources are built as the derivations hand them over.
@Suite("Account entitlements: which source decides, and what overlaps")
struct AccountEntitlementsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func source(
        _ id: String, kind: SourceKind = .subscription, store: Store = .appStore, tier: String? = "pro", level: Int? = 2, group: String? = nil,
        expiresIn days: Double? = 30, entitled: Bool = true, willRenew: Bool = true, nextChangeIn: Double? = nil
    ) -> EntitlementSource {
        EntitlementSource(
            id: id, kind: kind, store: store, productId: "\(id).product", tier: tier, level: level, group: group,
            startsAt: now.addingTimeInterval(-86_400), expiresAt: days.map { now.addingTimeInterval($0 * 86_400) },
            status: entitled ? .active : .expired, entitled: entitled, willRenew: willRenew,
            nextChangeAt: nextChangeIn.map { now.addingTimeInterval($0 * 86_400) })
    }

    @Test("the highest level decides whatever the store or the order the sources come in")
    func highestLevel() {
        let pro = Self.source("apple", tier: "pro", level: 2)
        let max = Self.source("web", store: .stripe, tier: "max", level: 1)
        let grant = Self.source("grant", kind: .grant, store: .operatorGrant, tier: "basic", level: 3, willRenew: false)
        for order in [[pro, max, grant], [grant, pro, max], [max, grant, pro]] {
            let account = AccountEntitlements(order)
            #expect(account.isEntitled)
            #expect(account.deciding?.tier == "max")
            #expect(account.entitling.map(\.id) == ["web", "apple", "grant"])
        }
    }

    @Test("a tie of levels goes to the source that lasts longest (for good beats any date), then to the smaller id")
    func ties() {
        let short = Self.source("b", expiresIn: 3)
        let long = Self.source("c", expiresIn: 300)
        let lifetime = Self.source("z", kind: .lifetime, expiresIn: nil, willRenew: false)
        #expect(AccountEntitlements([short, long]).deciding?.id == "c")
        #expect(AccountEntitlements([short, long, lifetime]).deciding?.id == "z")
        let twin = Self.source("a", expiresIn: 3)
        #expect(AccountEntitlements([short, twin]).deciding?.id == "a")
        // A product outside the catalogue (no level) decides only when nothing else entitles.
        let unknown = Self.source("x", tier: nil, level: nil, expiresIn: 900)
        #expect(AccountEntitlements([unknown, short]).deciding?.id == "b")
        #expect(AccountEntitlements([unknown]).deciding?.id == "x")
    }

    @Test("sources that do not entitle count for nothing but their next change")
    func notEntitling() {
        let lapsed = Self.source("old", tier: "max", level: 1, entitled: false, nextChangeIn: 2)
        let free = AccountEntitlements([lapsed])
        #expect(!free.isEntitled && free.deciding == nil && free.overlaps.isEmpty)
        #expect(free.nextChangeAt == Self.now.addingTimeInterval(2 * 86_400))
        let account = AccountEntitlements([lapsed, Self.source("new", nextChangeIn: 5)])
        #expect(account.deciding?.id == "new")
        #expect(account.nextChangeAt == Self.now.addingTimeInterval(2 * 86_400), "the earliest change of any source")
    }

    @Test("two auto-renewing sources of one group overlap; another group, a lifetime, a grant or a cancelled renewal do not")
    func overlaps() {
        let apple = Self.source("apple", store: .appStore)
        let web = Self.source("web", store: .stripe)
        #expect(AccountEntitlements([web, apple]).overlaps == ["default": ["apple", "web"]])
        let otherGroup = Self.source("web", store: .stripe, group: "video")
        #expect(AccountEntitlements([apple, otherGroup]).overlaps.isEmpty)
        let cancelled = Self.source("web", store: .stripe, willRenew: false)
        #expect(AccountEntitlements([apple, cancelled]).overlaps.isEmpty, "a cancelled renewal ends by itself: nothing to warn about")
        let lifetime = Self.source("life", kind: .lifetime, expiresIn: nil)
        let grant = Self.source("grant", kind: .grant, store: .operatorGrant)
        #expect(AccountEntitlements([apple, lifetime, grant]).overlaps.isEmpty)
        let play = Self.source("play", store: .googlePlay)
        #expect(AccountEntitlements([apple, web, play]).overlaps == ["default": ["apple", "play", "web"]])
    }

    @Test("of two versions of one purchase the newer signing is kept; on a tie the one that says it was taken back")
    func newestRecord() {
        let start = Self.now
        let bought = EntitlementRecord(id: "p", kind: .purchase, store: .appStore, startsAt: start, signedDate: 100)
        var refunded = bought
        refunded.endedAt = start.addingTimeInterval(60)
        refunded.signedDate = 200
        #expect(EntitlementRecord.newest(bought, refunded) == refunded)
        #expect(EntitlementRecord.newest(refunded, bought) == refunded)
        var sameMoment = refunded
        sameMoment.signedDate = 100
        #expect(EntitlementRecord.newest(bought, sameMoment) == sameMoment)
        #expect(EntitlementRecord.newest(sameMoment, bought) == sameMoment)
    }

    @Test("the words outside data uses survive a round trip, known or not")
    func words() throws {
        for word in ["app_store", "stripe", "google_play", "operator", "amazon"] {
            let store = Store(word)
            #expect(store.text == word)
            let encoded = try JSONEncoder().encode([store])
            #expect(try JSONDecoder().decode([Store].self, from: encoded) == [store])
        }
        #expect(Store("amazon") == .unknown("amazon"))
        #expect(Ownership("FAMILY_SHARED") == .familyShared && Ownership("SOMETHING").text == "SOMETHING")
        #expect(SourceKind("non_renewing") == .nonRenewing && SourceKind("rental").text == "rental")
    }
}
