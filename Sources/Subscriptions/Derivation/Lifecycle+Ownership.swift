import Foundation

extension Lifecycle {
    /// The account a subscription belongs to: the newest ownership fact wins. A purchase is such a fact when its
    /// `appAccountToken` differs from the previous period's (Apple changes the token only on a purchase — renewals
    /// repeat it), placed at the purchase; a claim is one, placed at its signed date.
    static func owner(facts: SubscriptionFacts, periods: [PaidPeriod]) -> UUID? {
        var newest: (position: EventPosition, account: UUID)?
        var previousToken: String?
        for period in periods {
            guard let token = period.appAccountToken?.lowercased(), token != previousToken else { continue }
            previousToken = token
            guard let account = UUID(uuidString: token) else { continue }
            let position = EventPosition(signedDate: milliseconds(period.start), eventId: "")
            if newest.map({ $0.position < position }) ?? true { newest = (position, account) }
        }
        for claim in facts.claims.values where newest.map({ $0.position < claim.position }) ?? true {
            newest = (claim.position, claim.account)
        }
        if newest == nil, let token = facts.renewalInfo?.value.appAccountToken { return UUID(uuidString: token) }
        return newest?.account
    }
}
