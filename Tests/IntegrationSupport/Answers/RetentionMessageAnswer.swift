/// `POST /apple/retention-message`: what Apple is to show a subscriber about to cancel — one of a message, an
/// alternate product or a promotional offer (openapi `RetentionAnswer`).
struct RetentionMessageAnswer: Decodable, Sendable {
    var message: Message?
    var alternateProduct: AlternateProduct?
    var promotionalOffer: PromotionalOffer?

    /// A message to show.
    struct Message: Decodable, Sendable {
        var messageIdentifier: String
    }

    /// Another product to suggest.
    struct AlternateProduct: Decodable, Sendable {
        var messageIdentifier: String
        var productId: String
        var billingPlanType: String?
    }

    /// A promotional offer, signed.
    struct PromotionalOffer: Decodable, Sendable {
        var messageIdentifier: String
        var promotionalOfferSignatureV2: String
    }
}

/// `GET /admin/retention`: each retention rule's answers and how many of those subscriptions stayed
/// (openapi `/admin/retention`).
struct RetentionReportAnswer: Decodable, Sendable {
    var since: String
    var rules: [Rule]

    /// One rule's line of the report.
    struct Rule: Decodable, Sendable {
        var rule: String
        /// Absent: answered an error (no default).
        var answer: String?
        var answers: Int
        var subscriptions: Int
        var stayed: Int
        /// Why the default was given (`no_rule`, `unknown_subscription`, `late`, `failed`); absent when a rule
        /// answered. (The document lacked it until decoding this answer found it.)
        var fallbackReason: String?
    }
}
