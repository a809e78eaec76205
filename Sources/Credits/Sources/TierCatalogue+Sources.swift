import Entitlements
import Foundation
import Subscriptions

extension TierCatalogue {
    /// Where customers manage App Store subscriptions.
    public static let appStoreManagementURL = "https://apps.apple.com/account/subscriptions"

    /// An App Store subscription as an entitlement source at `now`.
    public func source(of state: SubscriptionState, at now: Date) -> EntitlementSource {
        let tier = tier(ofProduct: state.productId)?.tier
        let status: SourceStatus
        switch state.effectiveStatus(at: now) {
        case .active: status = .active
        case .gracePeriod: status = .gracePeriod
        case .billingRetry: status = .billingRetry
        case .expired: status = .expired
        case .refunded: status = .refunded
        case .revoked: status = .revoked
        }
        return EntitlementSource(
            id: state.originalTransactionId, kind: .subscription, store: state.store, productId: state.productId, tier: tier?.id,
            level: tier?.level, group: tier?.group, startsAt: state.purchaseDate, expiresAt: state.clockEnd ?? state.expiresAt,
            status: status, entitled: state.isEntitled(at: now), willRenew: state.willRenew, endReason: state.endReason,
            managementURL: managementURL(of: state), nextChangeAt: state.nextChange(after: now))
    }

    /// Where the customer manages the subscription: the App Store's subscriptions page, Stripe's billing portal, or
    /// Play's subscription centre at this subscription (`sku` is the product id, without the base plan).
    func managementURL(of state: SubscriptionState) -> String? {
        switch state.store {
        case .stripe: return stripePortalURL
        case .googlePlay:
            var components = URLComponents(string: Self.googlePlayManagementURL)!
            if let package = googlePlayPackageName {
                let sku = state.productId.split(separator: "/").first.map(String.init) ?? state.productId
                components.queryItems = [URLQueryItem(name: "sku", value: sku), URLQueryItem(name: "package", value: package)]
            }
            return components.string
        default: return Self.appStoreManagementURL
        }
    }

    /// Play's subscription centre (the Play Billing documentation's deep link).
    public static let googlePlayManagementURL = "https://play.google.com/store/account/subscriptions"

    /// A grant or a one-time purchase as an entitlement source at `now`: it entitles its tier from its start until it
    /// ends — by the clock (a grant's end, a pass's duration) or early (ended by an operator, refunded, revoked).
    public func source(of record: EntitlementRecord, at now: Date) -> EntitlementSource {
        let (kind, tier) = terms(of: record)
        let end = clockEnd(of: record)
        let status: SourceStatus
        var nextChange: Date?
        if let endedAt = record.endedAt, endedAt <= now {
            switch record.endReason {
            case .refund?: status = .refunded
            case .revoke?: status = .revoked
            default: status = .ended
            }
        } else if now < record.startsAt {
            status = .scheduled
            nextChange = record.startsAt
        } else if let end, end <= now {
            status = .expired
        } else {
            status = .active
            nextChange = [end, record.endedAt].compactMap { $0 }.min()
        }
        return EntitlementSource(
            id: record.id, kind: kind, store: record.store, productId: record.productId, tier: tier?.id, level: tier?.level,
            group: tier?.group, startsAt: record.startsAt, expiresAt: end, status: status, entitled: status == .active && tier != nil,
            willRenew: false, endReason: record.endedAt == nil ? nil : record.endReason, managementURL: nil, nextChangeAt: nextChange)
    }

    /// Every source of an account at `now`: its App Store subscriptions, then its grants and one-time purchases.
    public func sources(subscriptions: [SubscriptionState], records: [EntitlementRecord], at now: Date) -> [EntitlementSource] {
        subscriptions.map { source(of: $0, at: now) } + records.map { source(of: $0, at: now) }
    }

    /// What a record is and which tier it entitles: a grant its tier; a purchase its product's, when the catalogue sells
    /// the product as a lifetime unlock or a non-renewing pass.
    func terms(of record: EntitlementRecord) -> (SourceKind, Tier?) {
        switch record.kind {
        case .grant:
            return (.grant, record.tier.flatMap { tier(id: $0) })
        case .purchase:
            guard let (tier, product) = record.productId.flatMap({ self.tier(ofProduct: $0) }) else { return (.lifetime, nil) }
            switch product.type {
            case .lifetime: return (.lifetime, tier)
            case .nonRenewing: return (.nonRenewing, tier)
            case .autoRenewable, .unknown: return (.unknown(product.type.text), nil)
            }
        case .unknown(let kind):
            return (.unknown(kind), nil)
        }
    }

    /// When a record stops entitling by the clock: a grant's end, a non-renewing purchase's duration after it was
    /// bought; `nil` for good.
    public func clockEnd(of record: EntitlementRecord) -> Date? {
        if let endsAt = record.endsAt { return endsAt }
        guard record.kind == .purchase, let product = record.productId.flatMap({ tier(ofProduct: $0)?.product }),
            product.type == .nonRenewing, let duration = product.entitlementDuration
        else { return nil }
        if duration.months > 0 { return CreditCalendar.monthlyBoundary(anchor: record.startsAt, month: duration.months) }
        return record.startsAt.addingTimeInterval(Double(duration.days) * 86_400)
    }
}
