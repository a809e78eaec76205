/// Where a subscription stands, as stored. The *effective* status at a given instant also depends on the clock
/// (see ``SubscriptionState/effectiveStatus(at:)``).
public enum SubscriptionStatus: String, Codable, Sendable, CaseIterable {
    case active
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case expired
    case refunded
    case revoked

    /// Apple's `data.status` / Server API status code: 1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked.
    public init?(appleStatusCode code: Int32) {
        switch code {
        case 1: self = .active
        case 2: self = .expired
        case 3: self = .billingRetry
        case 4: self = .gracePeriod
        case 5: self = .revoked
        default: return nil
        }
    }
}
