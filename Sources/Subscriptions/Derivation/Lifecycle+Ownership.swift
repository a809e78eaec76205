import Foundation

extension Lifecycle {
    /// The account a subscription belongs to: the newest ownership fact wins. A purchase is such a fact when its
    /// `appAccountToken` differs from the previous period's (Apple changes the token only on a purchase — renewals
    /// repeat it), placed at the purchase; a claim is one, placed at its signed date. A token the app asked for with
    /// `POST /v1/accounts/{id}/purchase-intents` names that account; any other token is the account id itself. `claimed`
    /// says the newest fact is a claim.
    static func owner(facts: SubscriptionFacts, periods: [PaidPeriod], purchaseIntents: [String: AccountID]) -> (account: AccountID, claimed: Bool)? {
        func account(_ token: String) -> AccountID? { purchaseIntents[token.lowercased()] ?? AccountID(token) }
        var newest: (position: EventPosition, account: AccountID, claimed: Bool)?
        var previousToken: String?
        for period in periods {
            guard let token = period.appAccountToken?.lowercased(), token != previousToken else { continue }
            previousToken = token
            guard let account = account(token) else { continue }
            let position = EventPosition(signedDate: milliseconds(period.start), eventId: "")
            if newest.map({ $0.position < position }) ?? true { newest = (position, account, false) }
        }
        for claim in facts.claims.values where newest.map({ $0.position < claim.position }) ?? true {
            newest = (claim.position, claim.account, true)
        }
        if newest == nil, let token = facts.renewalInfo?.value.appAccountToken { return account(token).map { ($0, false) } }
        return newest.map { ($0.account, $0.claimed) }
    }
}
