import AppStoreModels

/// What Storekeeper would answer a refund request if it answered now, worked out from the ledger as it stands by
/// ``RefundAnswerDraft`` — the code the answer job sends with. Listed beside each request that can still be answered.
public struct RefundAnswerPreview: Sendable, Equatable, Codable {
    /// Whose answer it is.
    public enum Source: String, Sendable, Codable {
        /// The app's own, recorded with `PUT /v1/refund-requests/{id}/answer`.
        case app
        /// The refund policy's, from the share of the purchase's credits used.
        case policy
    }

    /// A reason the answer would not be sent.
    public enum Withheld: String, Sendable, Codable {
        /// The store's API was not configured when the request arrived (`storekeeper dev`), or is not now: nothing is
        /// sent.
        case notConfigured = "not_configured"
        /// The account has not consented (`PUT /v1/accounts/{id}/consent`).
        case noConsent = "no_consent"
    }

    /// The body the store would get (Apple's field names; Play's review is made from it), `customerConsented` as the
    /// account's consent stands.
    public var answer: ConsumptionAnswer
    public var source: Source
    /// The share of the purchase's credits the ledger counts as used, in Apple's milliunits (100 000 is all of it);
    /// nil when the purchase credited nothing. The store gets `answer.consumptionPercentage` where it is set.
    public var consumptionPercentage: Int32?
    /// Whether the account consented to its data being sent.
    public var consented: Bool
    /// Whether this answer goes to the store at `answerAt`; `notSent` says every reason it would not.
    public var wouldSend: Bool
    public var notSent: [Withheld]

    public init(answer: ConsumptionAnswer, source: Source, consumptionPercentage: Int32?, consented: Bool, notSent: [Withheld]) {
        self.answer = answer
        self.answer.customerConsented = consented
        self.source = source
        self.consumptionPercentage = consumptionPercentage
        self.consented = consented
        self.wouldSend = notSent.isEmpty
        self.notSent = notSent
    }

    /// The preview in a few words: `DELIVERED · DECLINE · 62.5 % — the policy's; not sent: no consent`.
    public var summary: String {
        var text = "\(answer.summary) — the \(source == .app ? "app's" : "policy's")"
        if let share = consumptionPercentage {
            if share != answer.consumptionPercentage { text += ", \(Double(share) / 1000) % used" }
        } else {
            text += ", nothing credited"
        }
        let reasons = notSent.map {
            switch $0 {
            case .notConfigured: "the store's API is not configured"
            case .noConsent: "no consent"
            }
        }
        return reasons.isEmpty ? text : text + "; not sent: " + reasons.joined(separator: ", ")
    }
}
