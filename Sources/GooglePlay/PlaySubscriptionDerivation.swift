import Foundation

/// One read of a purchase token from `purchases.subscriptionsv2.get`, and when it was made.
public struct PlaySubscriptionRead: Sendable, Equatable {
    public var purchaseToken: String
    public var readAt: Date
    public var purchase: SubscriptionPurchaseV2

    public init(purchaseToken: String, readAt: Date, purchase: SubscriptionPurchaseV2) {
        self.purchaseToken = purchaseToken
        self.readAt = readAt
        self.purchase = purchase
    }
}

/// A Play subscription as its stored reads say: a chain of purchase tokens (each new token's `linkedPurchaseToken`
/// names the one it replaces — an upgrade, a downgrade, a re-signup), the newest of which alone can entitle.
public struct PlaySubscription: Sendable, Equatable {
    /// The chain's first token, as far as it is known (a `linkedPurchaseToken` never read counts): the subscription's
    /// stable id while its tokens change.
    public var id: String
    /// Tokens oldest first; the last is the current one.
    public var tokens: [String]
    public var currentToken: String { tokens.last ?? id }
    /// `<productId>/<basePlanId>` of the current token's main line item (the catalogue's name for it).
    public var productId: String?
    public var state: SubscriptionPurchaseV2.SubscriptionState
    /// The end of access the newest read gives (the grace period's end while in grace).
    public var expiresAt: Date?
    public var willRenew: Bool
    public var isTrial: Bool
    public var isTest: Bool
    /// `obfuscatedExternalAccountId` of the newest read that carries one; else, for a subscription bought again in the
    /// Play Store, the one its expired purchase carried (`outOfAppPurchaseContext`).
    public var accountToken: String?
    /// The expired purchase a subscription bought again in the Play Store follows (`outOfAppPurchaseContext`): its
    /// owner is this one's when nothing else names one.
    public var expiredPurchaseToken: String?
    /// Paid periods, oldest first: one per order id, each ending at the latest expiry seen with that order.
    public var periods: [Period]
    /// When the newest read of the current token was asked for: when its state was last seen.
    public var observedAt: Date
    /// `canceledStateContext`'s kind on the current token (`userInitiatedCancellation`, `systemInitiatedCancellation`, …).
    public var cancellation: String?
    /// When Play said the current token was revoked (`SUBSCRIPTION_REVOKED`, stored with its notification), if it did.
    public var revokedAt: Date?
    /// When Google first refunded one of the current token's orders whole (a voided purchase of any of its periods,
    /// which a read may never name: a read names only the latest order), if it did. Play voids an order only when it
    /// is to be revoked, so a refunded token that reads `EXPIRED` ended by the refund.
    public var refundedAt: Date? = nil
    /// The current token's product id (without the base plan): what `subscriptions.acknowledge` names.
    public var subscriptionProductId: String?
    /// The current token's newest read says it was granted and not acknowledged yet (`ACKNOWLEDGEMENT_STATE_PENDING`).
    public var awaitsAcknowledgement: Bool = false

    public struct Period: Sendable, Equatable {
        public var orderId: String
        public var purchaseToken: String
        /// `<productId>/<basePlanId>` of the line item the order paid for.
        public var productId: String
        /// The token's start for its first period; the previous period's end for a renewal of the same token (Play
        /// gives no period start: ``PlayLifecycle`` places a period by its product's length where it knows it).
        public var start: Date
        /// The order's expiry as the newest read naming it says: Play moves it back when access ends early (a hold, a
        /// pause, a revocation, a plan change) and on over a grace period.
        public var expiresAt: Date
        /// The order's expiry as the first read naming it said: the end of what was paid for.
        public var paidUntil: Date
        /// The token's `startTime`.
        public var tokenStart: Date?
        /// The line item's recurring price in milliunits and its currency, when the read says.
        public var price: Int64?
        public var currency: String?
        /// The order was a free trial's (`offerPhase` `freeTrial`).
        public var isFreeTrial: Bool
        /// When a read first saw the order.
        public var firstSeen: Date
        /// When Google refunded the order (a voided purchase of it), if it did.
        public var voidedAt: Date? = nil
    }

    /// Whether any token of the chain went through: a chain of pending purchases (or abandoned ones) never granted
    /// anything and is no subscription yet.
    public var isGranted: Bool {
        switch state {
        case .pending, .pendingPurchaseCanceled: return !periods.isEmpty
        default: return true
        }
    }

    /// The states that entitle while the period runs (Play's subscription lifecycle: active, in grace, and canceled
    /// until it expires); paused, on hold, pending and expired do not.
    public func isEntitled(at now: Date) -> Bool {
        switch state {
        case .active, .inGracePeriod, .canceled: return expiresAt.map { now < $0 } ?? false
        case .pending, .paused, .onHold, .expired, .pendingPurchaseCanceled, .unknown: return false
        }
    }
}

/// Derives Play subscriptions from stored reads: a pure function of the set of reads, whatever order they were made
/// or stored in — the same reads always give the same subscriptions.
public enum PlaySubscriptionDerivation {
    /// - Parameters:
    ///   - revocations: when each revoked token's `SUBSCRIPTION_REVOKED` was sent (a read says only that the token
    ///     expired).
    ///   - voided: the orders Google refunded (a refund names one order: one period, perhaps long past).
    public static func derive(_ reads: [PlaySubscriptionRead], revocations: [String: Date] = [:], voided: [VoidedPurchase] = []) -> [PlaySubscription]
    {
        // The newest read of each token decides its state; every read contributes its period.
        var newest: [String: PlaySubscriptionRead] = [:]
        for read in reads {
            if let held = newest[read.purchaseToken], !isNewer(read, than: held) { continue }
            newest[read.purchaseToken] = read
        }
        // A token's predecessor is what any read of it links to (a link never changes; the newest read names it).
        var predecessor: [String: String] = [:]
        var successors: [String: [String]] = [:]
        for (token, read) in newest {
            guard let linked = read.purchase.linkedPurchaseToken, linked != token else { continue }
            predecessor[token] = linked
            successors[linked, default: []].append(token)
        }
        var chains: [String: [String]] = [:]
        for token in newest.keys {
            chains[root(of: token, predecessor), default: []].append(token)
        }
        return chains.map { id, members in
            let ordered = members.sorted { order(newest[$0]!, newest[$1]!) }
            // The current token: one no granted token replaced — a pending purchase (an upgrade not yet paid, or one
            // abandoned: PENDING_PURCHASE_CANCELED) replaces nothing, the subscription it names goes on. Granted
            // tokens first; of several (never expected), the newest purchase.
            let replaced = { (token: String) in successors[token]?.contains { newest[$0].map(isGranted) ?? false } ?? false }
            let candidates = ordered.filter { !replaced($0) }
            let current = candidates.last { newest[$0].map(isGranted) ?? false } ?? candidates.last ?? ordered.last!
            let latest = newest[current]!.purchase
            let line = latest.mainLineItem
            let chainReads = reads.filter { members.contains($0.purchaseToken) }
            return PlaySubscription(
                id: id, tokens: ordered.filter { $0 != current } + [current],
                productId: line.map { item in item.basePlanId.map { "\(item.productId)/\($0)" } ?? item.productId },
                state: latest.subscriptionState, expiresAt: line?.expiryTime,
                willRenew: line?.autoRenewEnabled ?? false, isTrial: line?.offerPhase == "freeTrial", isTest: latest.isTest,
                accountToken: ordered.reversed().lazy.compactMap { newest[$0]?.purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId }
                    .first
                    ?? ordered.reversed().lazy.compactMap {
                        newest[$0]?.purchase.outOfAppPurchaseContext?.expiredExternalAccountIdentifiers?.obfuscatedExternalAccountId
                    }.first,
                expiredPurchaseToken: ordered.reversed().lazy.compactMap { newest[$0]?.purchase.outOfAppPurchaseContext?.expiredPurchaseToken }
                    .first,
                periods: periods(chainReads, voided: voided), observedAt: newest[current]!.readAt, cancellation: latest.cancellation,
                revokedAt: revocations[current],
                refundedAt: voided.filter { $0.purchaseToken == current && !$0.isPartial }.map(\.voidedAt).min(),
                subscriptionProductId: line?.productId,
                awaitsAcknowledgement: latest.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING" && isGranted(newest[current]!))
        }.sorted { $0.id < $1.id }
    }

    /// One period per order id, ending at the latest expiry any read saw for it; a trial's zero-price first period
    /// has an order id too and counts as one.
    static func periods(_ reads: [PlaySubscriptionRead], voided: [VoidedPurchase] = []) -> [PlaySubscription.Period] {
        var byOrder: [String: PlaySubscription.Period] = [:]
        var newestRead: [String: PlaySubscriptionRead] = [:]
        var tokenStart: [String: Date] = [:]
        // Oldest read first: the first read naming an order says what was paid for, the newest where access ends.
        for read in reads.sorted(by: { isNewer($1, than: $0) }) {
            if let start = read.purchase.startTime { tokenStart[read.purchaseToken] = min(tokenStart[read.purchaseToken] ?? start, start) }
            for item in read.purchase.lineItems {
                guard let order = item.latestSuccessfulOrderId, let expiry = item.expiryTime else { continue }
                if var held = byOrder[order] {
                    if let newest = newestRead[order], !isNewer(read, than: newest) { continue }
                    held.expiresAt = expiry
                    byOrder[order] = held
                } else {
                    byOrder[order] = .init(
                        orderId: order, purchaseToken: read.purchaseToken,
                        productId: item.basePlanId.map { "\(item.productId)/\($0)" } ?? item.productId,
                        start: expiry, expiresAt: expiry, paidUntil: expiry, tokenStart: nil, price: item.recurringPrice?.milliunits,
                        currency: item.recurringPrice?.currencyCode, isFreeTrial: item.offerPhase == "freeTrial", firstSeen: read.readAt)
                }
                newestRead[order] = read
            }
        }
        for (order, period) in byOrder {
            byOrder[order]?.tokenStart = tokenStart[period.purchaseToken]
            byOrder[order]?.voidedAt = voided.filter { $0.orderId == order }.map(\.voidedAt).min()
        }
        var periods = byOrder.values.sorted { ($0.paidUntil, $0.orderId) < ($1.paidUntil, $1.orderId) }
        // Play gives no period start: without the product's length, a token's first period starts with the token, each
        // renewal where the previous period of the same token was paid until.
        var previousEnd: [String: Date] = [:]
        for index in periods.indices {
            let token = periods[index].purchaseToken
            periods[index].start = min(previousEnd[token] ?? tokenStart[token] ?? periods[index].paidUntil, periods[index].paidUntil)
            previousEnd[token] = periods[index].paidUntil
        }
        return periods
    }

    /// Follows links to the oldest token named (cycles, which Google never makes, stop at the smallest token seen).
    static func root(of token: String, _ predecessor: [String: String]) -> String {
        var current = token
        var seen: Set<String> = [token]
        while let previous = predecessor[current] {
            guard seen.insert(previous).inserted else { return seen.min()! }
            current = previous
        }
        return current
    }

    /// Whether a token's purchase went through: a pending one (or one whose pending purchase was canceled) never
    /// granted anything.
    static func isGranted(_ read: PlaySubscriptionRead) -> Bool {
        switch read.purchase.subscriptionState {
        case .pending, .pendingPurchaseCanceled: return false
        default: return true
        }
    }

    static func isNewer(_ read: PlaySubscriptionRead, than other: PlaySubscriptionRead) -> Bool {
        (read.readAt, fingerprint(read)) > (other.readAt, fingerprint(other))
    }

    /// Purchases in the order they were made: start time, then the token (a total order, so the result is the same
    /// whatever order the reads came in).
    static func order(_ left: PlaySubscriptionRead, _ right: PlaySubscriptionRead) -> Bool {
        (left.purchase.startTime ?? .distantPast, left.purchaseToken) < (right.purchase.startTime ?? .distantPast, right.purchaseToken)
    }

    /// Breaks a tie between two reads of one token made at the same instant, by what they say.
    static func fingerprint(_ read: PlaySubscriptionRead) -> String {
        let line = read.purchase.mainLineItem
        return "\(line?.expiryTime?.timeIntervalSince1970 ?? 0)|\(read.purchase.subscriptionState.text)|\(line?.latestSuccessfulOrderId ?? "")"
    }
}
