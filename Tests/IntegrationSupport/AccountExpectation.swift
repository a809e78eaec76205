import Application
import Foundation
import HummingbirdTesting
import Persistence
import Subscriptions
import Testing

/// What a scenario expects of its account once every event is in: the status answer and the events sent (Stripe's
/// and Play's scenario files, `expect`).
struct AccountExpectation: Decodable {
    var state: String
    var tier: String?
    var entitled: Bool
    /// `subscription.status` and `store` of the status answer's deciding subscription.
    var subscriptionStatus: String?
    var subscriptionStore: String?
    var willRenew: Bool?
    /// Every entitling source's store, sorted.
    var entitlementStores: [String]?
    /// `credits.<meter>.remaining`.
    var remaining: [String: Int64]?
    /// `credits.<meter>.topUp`.
    var topUp: [String: Int64]?
    /// Event types the account must have been sent (`GET /v1/events`), with `data.store` when given.
    var events: [String]?
    /// Event types the account must have been sent exactly once: a purchase's `started` and `ended` are one change each,
    /// whatever versions of it the store signs.
    var eventsOnce: [String]?
    /// An event type and the `change.reason` one of its events must carry (`subscription.expired`:
    /// `EXPIRED_BILLING_RETRY`).
    var eventReasons: [String: String]?
}

extension AccountExpectation {
    /// Checks the account's status (and, in order, its events) against this expectation; every subscription event must name
    /// one of `stores`.
    func check(
        label: String, account: UUID, http: any TestClientProtocol, harness: StorekeeperHarness, shuffled: Bool, stores: Set<String>
    ) async throws {
        let status = try await http.getWithKey("/v1/accounts/\(account.uuidString.lowercased())/status").answer(StatusAnswer.self)
        #expect(status.state == self.state, "\(label): state")
        #expect(status.tier == self.tier, "\(label): tier")
        #expect(status.entitled == self.entitled, "\(label): entitled")
        let subscription = status.subscription
        if let expected = self.subscriptionStatus { #expect(subscription?.status == expected, "\(label): subscription.status") }
        if let expected = self.subscriptionStore { #expect(subscription?.store == expected, "\(label): subscription.store") }
        if let expected = self.willRenew { #expect(subscription?.willRenew == expected, "\(label): willRenew") }
        if let expected = self.entitlementStores {
            let stores = status.entitlements.map(\.store).sorted()
            #expect(stores == expected.sorted(), "\(label): entitlements' stores")
        }
        for (meter, remaining) in self.remaining ?? [:] {
            #expect(status.credits[meter]?.remaining == remaining, "\(label): \(meter) remaining")
        }
        for (meter, topUp) in self.topUp ?? [:] {
            #expect(status.credits[meter]?.topUp == topUp, "\(label): \(meter) top-up")
        }
        if !shuffled, self.events != nil || self.eventsOnce != nil || self.eventReasons != nil {
            // From the event log itself (the feed holds back events of transactions newer than one still running).
            var types = Set<String>()
            var sent: [String: Int] = [:]
            var reasons: [String: Set<String>] = [:]
            let history = EventHistory(client: harness.client, queue: harness.components.queue, logger: TestDatabase.logger)
            for event in try await history.recent(account: AccountID(account), types: .all, limit: 1000) {
                types.insert(event.type)
                sent[event.type, default: 0] += 1
                // Every subscription event names its store, and so does a one-time purchase's start and end.
                // The stored body of an event, from the database rather than an HTTP answer: read raw.
                let change = (try? JSONSerialization.jsonObject(with: Data(event.body.utf8)) as? [String: Any])?["change"] as? [String: Any]
                let store = change?["store"] as? String
                if let reason = change?["reason"] as? String { reasons[event.type, default: []].insert(reason) }
                if event.type.hasPrefix("subscription.") || ["purchase.started", "purchase.ended"].contains(event.type) {
                    #expect(store.map(stores.contains) == true, "\(label): \(event.type) names its store")
                }
            }
            for type in events ?? [] { #expect(types.contains(type), "\(label): event \(type) sent (got \(types.sorted()))") }
            for type in eventsOnce ?? [] { #expect(sent[type] == 1, "\(label): event \(type) sent once (got \(sent))") }
            for (type, reason) in eventReasons ?? [:] {
                #expect(reasons[type]?.contains(reason) == true, "\(label): \(type) with reason \(reason) (got \(reasons))")
            }
        }
    }
}
