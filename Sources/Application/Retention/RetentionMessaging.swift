import AppStoreModels
import Credits
import Entitlements
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Answers Apple's Get Retention Message requests (`POST /apple/retention-message`, docs/retention.md): reads what
/// the customer did this period, lets ``RetentionPolicy`` choose, signs a promotional offer when the choice is one,
/// and stores the decision with its `subscription.retention_offered` event — all in one transaction, so an answer
/// Apple gets is always on record and a request identifier answers once.
public struct RetentionMessaging: Sendable {
    /// What was decided: the rule and the answer (`nil`: answer an error so Apple shows its default message).
    public struct Answer: Sendable, Equatable {
        public var rule: String
        public var answer: RetentionAnswer?
        public var fallbackReason: String?
    }

    /// The request identifier was answered before: a replay.
    public struct Replayed: Error, Sendable {}

    /// The answer was given up for the default before this transaction could commit: it rolls back.
    public struct Late: Error, Sendable {}

    /// Who answers Apple: the decision, just before it commits, or its caller, with the default once the deadline has
    /// passed. The first to ask wins.
    public protocol Claim: Sendable {
        /// Whether the decision may commit: `false` once the caller gave the answer up.
        func claimForCommit() -> Bool
        /// Whether the caller gave the answer up: the decision stops at its next step.
        var isGivenUp: Bool { get }
    }

    let client: PostgresClient
    public let policy: RetentionPolicy
    let catalogue: TierCatalogue
    let offers: OfferSigning?
    let events: EventRecorder?
    let decisions: RetentionDecisions
    let logger: Logger

    /// - Parameter offers: signs promotional offers under their eligibility rules; required when the policy answers
    ///   with them (the configuration checks it).
    public init(
        client: PostgresClient, policy: RetentionPolicy, catalogue: TierCatalogue, offers: OfferSigning?, events: EventRecorder?, logger: Logger
    ) {
        self.client = client
        self.policy = policy
        self.catalogue = catalogue
        self.offers = offers
        self.events = events
        self.decisions = RetentionDecisions(logger: logger)
        self.logger = logger
    }

    /// Decides and records the answer to `request`. `claim` is asked just before the transaction commits, and between
    /// its steps: given up (the caller already answered the default), everything rolls back and ``Late`` is thrown.
    /// Throws ``Replayed`` when the identifier was answered before.
    public func answer(_ request: RetentionRequestPayload, identifier: UUID, now: Date, claim: any Claim) async throws -> Answer {
        do {
            return try await client.withFencedTransaction(logger: logger) { connection in
                try await decide(request, identifier: identifier, now: now, claim: claim, on: connection)
            }
        } catch let error as PostgresTransactionError where error.closureError is Replayed {
            throw Replayed()
        } catch let error as PostgresTransactionError where error.closureError is Late {
            throw Late()
        }
    }

    private func decide(
        _ request: RetentionRequestPayload, identifier: UUID, now: Date, claim: any Claim, on connection: PostgresConnection
    ) async throws -> Answer {
        // An answer given up stops here rather than run every step still ahead (each would get the whole deadline
        // again from the server's timeouts) holding a connection and, for an offer, the account's lock.
        func goOn() throws { if claim.isGivenUp { throw Late() } }
        // A lock or a statement waiting past the deadline ends on the server too, and gives its connection back.
        try await decisions.limitWaits(to: policy.deadline, on: connection)
        let environment = request.environment
        guard var reading = try await decisions.reading(of: request.originalTransactionId, environment: environment, on: connection) else {
            let answer = Answer(rule: RetentionPolicy.defaultRule, answer: fallback, fallbackReason: "unknown_subscription")
            try await record(answer, for: request, identifier: identifier, account: nil, now: now, on: connection)
            guard claim.claimForCommit() else { throw Late() }
            return answer
        }
        try goOn()
        var facts = Self.facts(reading, product: request.productId, catalogue: catalogue, now: now)
        var decision = policy.decide(facts)
        var offerId: String?
        var answer: RetentionAnswer?
        if case .promotionalOffer = decision.answer, let account = reading.account {
            // The account's lock, then the facts again: requests at once for one account see each other's offers.
            try await OfferSignatures(logger: logger).lockAccount(account, on: connection)
            try goOn()
            reading = try await decisions.reading(of: request.originalTransactionId, environment: environment, on: connection) ?? reading
            facts = Self.facts(reading, product: request.productId, catalogue: catalogue, now: now)
            decision = policy.decide(facts)
            // Every rule of `POST /v1/offers/promotional` applies (audience, once per account, redeemed); an offer the
            // account may not have passes the choice to the next rule.
            while case .promotionalOffer(let message, let offer, _) = decision.answer, answer == nil {
                if let offers,
                    case .signed(let jws) = try await offers.promotionalJWS(
                        offer, account: account, transactionId: request.originalTransactionId, now: now, on: connection)
                {
                    answer = .promotionalOffer(messageIdentifier: message, signatureV2: jws)
                    offerId = offer.id
                } else {
                    facts.ineligibleOffers.insert(offer.id)
                    decision = policy.decide(facts)
                }
                try goOn()
            }
        }
        logger.debug("retention facts", metadata: ["retention.facts": "\(facts)"])
        if answer == nil { answer = decision.answer.flatMap(Self.plainAnswer) }
        let chosen = Answer(rule: decision.rule, answer: answer, fallbackReason: decision.rule == RetentionPolicy.defaultRule ? "no_rule" : nil)
        try await record(chosen, for: request, identifier: identifier, account: reading.account, now: now, on: connection)
        if let account = reading.account, let events, let answer {
            try await events.record(
                [Self.event(answer, rule: chosen.rule, offerId: offerId, request: request, identifier: identifier, account: account)], now: now,
                on: connection)
        }
        guard claim.claimForCommit() else { throw Late() }
        return chosen
    }

    /// Records, best effort and after the fact, that `request` got the default because deciding failed or ran late.
    public func recordFallback(_ request: RetentionRequestPayload, identifier: UUID, reason: String, now: Date) async {
        let answer = Answer(rule: RetentionPolicy.defaultRule, answer: fallback, fallbackReason: reason)
        do {
            try await client.withFencedTransaction(logger: logger) { connection in
                try await decisions.limitWaits(to: .seconds(1), on: connection)
                try await record(answer, for: request, identifier: identifier, account: nil, now: now, on: connection)
            }
        } catch {
            logger.notice("retention fallback not recorded", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Each rule's answers since `since`, with how many of those subscriptions stayed (``RetentionDecisions/ruleCounts(since:on:)``).
    public func ruleCounts(since: Date) async throws -> [RetentionDecisions.RuleCount] {
        try await client.withFencedConnection { try await decisions.ruleCounts(since: since, on: $0) }
    }

    /// The answer when deciding fails or runs late: the policy's default.
    public var fallback: RetentionAnswer? { policy.fallback.flatMap(Self.plainAnswer) }

    /// How long deciding may take.
    public var deadline: Duration { policy.deadline }

    /// The answer of a rule that needs no signature (a promotional offer always does: `nil`).
    static func plainAnswer(_ answer: RetentionPolicy.Answer) -> RetentionAnswer? {
        switch answer {
        case .message(let id): .message(messageIdentifier: id)
        case .alternateProduct(let id, let product, let plan): .alternateProduct(messageIdentifier: id, productId: product, billingPlanType: plan)
        case .promotionalOffer: nil
        }
    }

    /// `subscription.retention_offered` for an answer given.
    static func event(
        _ answer: RetentionAnswer, rule: String, offerId: String?, request: RetentionRequestPayload, identifier: UUID, account: AccountID
    ) -> EventDraft {
        var suggested: String?
        if case .alternateProduct(_, let product, _) = answer { suggested = product }
        return EventDraft(
            type: .subscriptionRetentionOffered, key: "retention:\(identifier.lowercasedText)", account: account,
            subscription: request.originalTransactionId, environment: request.environment ?? .unknown,
            change: EventChange(
                productId: suggested, retentionRule: rule, retentionAnswer: answer.kind, messageIdentifier: answer.messageIdentifier, offerId: offerId
            ),
            cause: EventCause(
                eventId: identifier.lowercasedText, originalTransactionId: request.originalTransactionId,
                signedDate: Date(timeIntervalSince1970: Double(request.signedDate) / 1000)))
    }

    private func record(
        _ answer: Answer, for request: RetentionRequestPayload, identifier: UUID, account: AccountID?, now: Date, on connection: PostgresConnection
    ) async throws {
        let body = try answer.answer.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let stored = try await decisions.record(
            RetentionDecisions.Decision(
                requestIdentifier: identifier, originalTransactionId: request.originalTransactionId, account: account,
                environment: request.environment ?? .unknown, productId: request.productId, rule: answer.rule,
                answerKind: answer.answer?.kind, answer: body, fallbackReason: answer.fallbackReason, signedDate: request.signedDate,
                decidedAt: now),
            on: connection)
        guard stored else { throw Replayed() }
    }

    /// The policy's facts from a reading and the product Apple says the customer looks at: its tier and group, whole
    /// days and calendar months.
    static func facts(_ reading: RetentionDecisions.Reading, product: String, catalogue: TierCatalogue, now: Date) -> RetentionFacts {
        let tier = catalogue.tier(ofProduct: product)?.tier
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let months = max(0, calendar.dateComponents([.month], from: reading.firstSeen, to: now).month ?? 0)
        let days = reading.lastSpend.map { max(0, Int(now.timeIntervalSince($0) / 86_400)) }
        return RetentionFacts(
            productId: product, accountKnown: reading.account != nil, tier: tier?.id, group: tier?.group, spentShare: reading.spentShare,
            daysSinceLastSpend: days, monthsSubscribed: months, topUpsBought: reading.topUpsBought, offersSigned: reading.offersSigned)
    }
}
