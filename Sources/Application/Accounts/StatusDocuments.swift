import Credits
import Entitlements
import Events
import Foundation
import Subscriptions

/// The body of `GET /v1/accounts/{id}/status` (SPEC §5.2), also the `status` of every event. Absent values are
/// explicit `null`s.
public struct AccountStatusResponse: Encodable, Sendable {
    var accountId: AccountID
    var standing: AccountStanding
    var now: Date

    var status: AccountStatus { standing.status }
    var credits: AccountCredits { standing.credits }

    public init(accountId: AccountID, standing: AccountStanding, now: Date) {
        self.accountId = accountId
        self.standing = standing
        self.now = now
    }

    enum CodingKeys: String, CodingKey {
        case accountId, state, entitled, tier, hadSubscription, subscription, credits, nextChangeAt, entitlements, features
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accountId.text, forKey: .accountId)
        try container.encode(status.state.rawValue, forKey: .state)
        try container.encode(status.entitled, forKey: .entitled)
        try container.encode(credits.tier, forKey: .tier)
        try container.encode(status.hadSubscription, forKey: .hadSubscription)
        try container.encode(status.subscription.map { SubscriptionResponse(state: $0, now: now) }, forKey: .subscription)
        try container.encode(credits.meters.mapValues(MeterCreditsResponse.init), forKey: .credits)
        try container.encode(status.nextChangeAt, forKey: .nextChangeAt)
        try container.encode(standing.entitlements.entitling.map(EntitlementResponse.init), forKey: .entitlements)
        try container.encode(standing.features, forKey: .features)
    }
}

/// One entry of the status answer's `entitlements`: a source that entitles the account now.
struct EntitlementResponse: Encodable {
    var source: EntitlementSource

    enum CodingKeys: String, CodingKey {
        case id, source, store, productId, tier, expiresAt, willRenew, managementUrl
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source.id, forKey: .id)
        try container.encode(source.kind.text, forKey: .source)
        try container.encode(source.store.text, forKey: .store)
        try container.encode(source.productId, forKey: .productId)
        try container.encode(source.tier, forKey: .tier)
        try container.encode(source.expiresAt, forKey: .expiresAt)
        try container.encode(source.willRenew, forKey: .willRenew)
        try container.encode(source.managementURL, forKey: .managementUrl)
    }
}

/// The `subscription` object of the status answer.
struct SubscriptionResponse: Encodable {
    var state: SubscriptionState
    var now: Date

    enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, environment, status, willRenew, autoRenewProductId, pendingProductId
        case expiresAt, gracePeriodExpiresAt, isTrial, ownership, store, billingPlan, commitment, winBackOfferIds
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state.originalTransactionId, forKey: .originalTransactionId)
        try container.encode(state.productId, forKey: .productId)
        try container.encode(state.environment, forKey: .environment)
        try container.encode(state.effectiveStatus(at: now).rawValue, forKey: .status)
        try container.encode(state.willRenew, forKey: .willRenew)
        try container.encode(state.autoRenewProductId, forKey: .autoRenewProductId)
        try container.encode(state.pendingProductId, forKey: .pendingProductId)
        try container.encode(state.expiresAt, forKey: .expiresAt)
        try container.encode(state.gracePeriodExpiresAt, forKey: .gracePeriodExpiresAt)
        try container.encode(state.isTrial, forKey: .isTrial)
        try container.encode(state.ownership, forKey: .ownership)
        try container.encode(state.store.text, forKey: .store)
        try container.encode(state.billingPlan.text, forKey: .billingPlan)
        try container.encode(state.commitment.map(CommitmentResponse.init), forKey: .commitment)
        try container.encode(state.winBackOfferIds, forKey: .winBackOfferIds)
    }
}

/// The `commitment` of the subscription object, every field present.
struct CommitmentResponse: Encodable {
    var commitment: SubscriptionState.Commitment

    enum CodingKeys: String, CodingKey {
        case period, of, endsAt, renewsTo, priceAfter
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(commitment.period, forKey: .period)
        try container.encode(commitment.of, forKey: .of)
        try container.encode(commitment.endsAt, forKey: .endsAt)
        try container.encode(commitment.renewsTo, forKey: .renewsTo)
        try container.encode(commitment.priceAfter, forKey: .priceAfter)
    }
}

/// The body of `GET /v1/subscriptions/{originalTransactionId}`: the subscription object plus its account and the
/// type of the last notification applied.
public struct SubscriptionDetailResponse: Encodable, Sendable {
    var state: SubscriptionState
    var now: Date

    public init(state: SubscriptionState, now: Date) {
        self.state = state
        self.now = now
    }

    enum CodingKeys: String, CodingKey {
        case accountId, lastEventType, endReason, revokedAt, offer, priceIncrease
    }

    public func encode(to encoder: any Encoder) throws {
        try SubscriptionResponse(state: state, now: now).encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state.accountId?.text, forKey: .accountId)
        try container.encode(state.lastEventType, forKey: .lastEventType)
        try container.encode(state.endReason, forKey: .endReason)
        try container.encode(state.revokedAt, forKey: .revokedAt)
        try container.encode(state.offer, forKey: .offer)
        try container.encode(state.priceIncrease, forKey: .priceIncrease)
    }
}

/// One meter of the status answer's `credits`, every field present (`null` when it does not apply).
struct MeterCreditsResponse: Encodable {
    var credits: MeterCredits

    enum CodingKeys: String, CodingKey {
        case remaining, cycle, topUp, resetsAt, dailyRemaining, unlimited, held
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(credits.remaining, forKey: .remaining)
        try container.encode(credits.cycle, forKey: .cycle)
        try container.encode(credits.topUp, forKey: .topUp)
        try container.encode(credits.resetsAt, forKey: .resetsAt)
        try container.encode(credits.dailyRemaining, forKey: .dailyRemaining)
        try container.encode(credits.unlimited, forKey: .unlimited)
        try container.encode(credits.held, forKey: .held)
    }
}

extension AccountStatusResponse {
    /// The document as JSON, as its `Encodable` form writes it with sorted keys, written by hand (see ``JSONWriter``).
    public var json: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("accountId", accountId.text)
        writer.key("credits")
        writer.beginObject()
        for (meter, credits) in credits.meters.sorted(by: { $0.key < $1.key }) {
            writer.key(meter)
            writer.beginObject()
            writer.member("cycle", credits.cycle)
            writer.member("dailyRemaining", credits.dailyRemaining)
            writer.member("held", credits.held)
            writer.member("remaining", credits.remaining)
            writer.member("resetsAt", date: credits.resetsAt)
            writer.member("topUp", credits.topUp)
            writer.member("unlimited", credits.unlimited)
            writer.endObject()
        }
        writer.endObject()
        writer.member("entitled", status.entitled)
        writer.key("entitlements")
        writer.beginArray()
        for source in standing.entitlements.entitling {
            writer.element()
            writer.beginObject()
            writer.member("expiresAt", date: source.expiresAt)
            writer.member("id", source.id)
            writer.member("managementUrl", source.managementURL)
            writer.member("productId", source.productId)
            writer.member("source", source.kind.text)
            writer.member("store", source.store.text)
            writer.member("tier", source.tier)
            writer.member("willRenew", source.willRenew)
            writer.endObject()
        }
        writer.endArray()
        writer.key("features")
        writer.beginObject()
        for (name, value) in standing.features.sorted(by: { $0.key < $1.key }) {
            writer.key(name)
            switch value {
            case .boolean(let flag): writer.bool(flag)
            case .number(let number): writer.number(number)
            case .text(let text), .level(let text): writer.string(text)
            }
        }
        writer.endObject()
        writer.member("hadSubscription", status.hadSubscription)
        writer.member("nextChangeAt", date: status.nextChangeAt)
        writer.member("state", status.state.rawValue)
        writer.key("subscription")
        if let state = status.subscription {
            writer.beginObject()
            writer.member("autoRenewProductId", state.autoRenewProductId)
            writer.member("billingPlan", state.billingPlan.text)
            writer.key("commitment")
            if let commitment = state.commitment {
                writer.beginObject()
                writer.member("endsAt", date: commitment.endsAt)
                writer.member("of", Int64(commitment.of))
                writer.member("period", Int64(commitment.period))
                writer.member("priceAfter", commitment.priceAfter)
                writer.member("renewsTo", commitment.renewsTo)
                writer.endObject()
            } else {
                writer.null()
            }
            writer.member("environment", state.environment.rawValue)
            writer.member("expiresAt", date: state.expiresAt)
            writer.member("gracePeriodExpiresAt", date: state.gracePeriodExpiresAt)
            writer.member("isTrial", state.isTrial)
            writer.member("originalTransactionId", state.originalTransactionId)
            writer.member("ownership", state.ownership.text)
            writer.member("pendingProductId", state.pendingProductId)
            writer.member("productId", state.productId)
            writer.member("status", state.effectiveStatus(at: now).rawValue)
            writer.member("store", state.store.text)
            writer.member("willRenew", state.willRenew)
            writer.key("winBackOfferIds")
            writer.beginArray()
            for offer in state.winBackOfferIds {
                writer.element()
                writer.string(offer)
            }
            writer.endArray()
            writer.endObject()
        } else {
            writer.null()
        }
        writer.member("tier", credits.tier)
        writer.endObject()
    }
}
