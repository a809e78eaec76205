import AppStoreModels
import AppStoreServerAPI
import Credits
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

    let client: PostgresClient
    public let policy: RetentionPolicy
    let catalogue: TierCatalogue
    let signer: OfferSigner?
    let events: EventRecorder?
    let decisions: RetentionDecisions
    let logger: Logger

    /// - Parameter signer: required when the policy answers promotional offers (the configuration checks it).
    public init(
        client: PostgresClient, policy: RetentionPolicy, catalogue: TierCatalogue, signer: OfferSigner?, events: EventRecorder?,
        logger: Logger
    ) {
        self.client = client
        self.policy = policy
        self.catalogue = catalogue
        self.signer = signer
        self.events = events
        self.decisions = RetentionDecisions(logger: logger)
        self.logger = logger
    }

    /// Decides and records the answer to `request`; throws ``Replayed`` when its identifier was answered before.
    public func answer(_ request: RetentionRequestPayload, identifier: UUID, now: Date) async throws -> Answer {
        do {
            return try await decide(request, identifier: identifier, now: now)
        } catch let error as PostgresTransactionError where error.closureError is Replayed {
            throw Replayed()
        }
    }

    private func decide(_ request: RetentionRequestPayload, identifier: UUID, now: Date) async throws -> Answer {
        try await client.withTransaction(logger: logger) { connection in
            guard let reading = try await decisions.reading(of: request.originalTransactionId, on: connection) else {
                let answer = Answer(rule: RetentionPolicy.defaultRule, answer: policy.fallback.flatMap(Self.plainAnswer), fallbackReason: "unknown_subscription")
                try await record(answer, for: request, identifier: identifier, account: nil, environment: nil, now: now, on: connection)
                return answer
            }
            var facts = Self.facts(reading, catalogue: catalogue, now: now)
            var decision = policy.decide(facts)
            logger.debug("retention facts", metadata: ["retention.facts": "\(facts)"])
            var offerId: String?
            var answer: RetentionAnswer?
            var locked = false
            while case .promotionalOffer(let message, let offer, _) = decision.answer, answer == nil, let account = reading.account, let signer {
                // Signed once per account however many ask at once: the account's lock, then the check again.
                let signatures = OfferSignatures(logger: logger)
                if !locked {
                    try await signatures.lockAccount(account, on: connection)
                    locked = true
                }
                if offer.oncePerAccount, try await signatures.wasSigned(offer.id, for: account, on: connection) {
                    facts.offersSigned[offer.id, default: 0] += 1
                    decision = policy.decide(facts)
                    continue
                }
                let nonce = UUID()
                let jws = try signer.promotionalJWS(
                    productId: offer.productId, offerId: offer.id, transactionId: request.originalTransactionId, nonce: nonce, issuedAt: now)
                try await signatures.record(offer.id, productId: offer.productId, nonce: nonce, for: account, at: now, on: connection)
                answer = .promotionalOffer(messageIdentifier: message, signatureV2: jws)
                offerId = offer.id
            }
            if answer == nil { answer = decision.answer.flatMap(Self.plainAnswer) }
            let chosen = Answer(
                rule: decision.rule, answer: answer, fallbackReason: decision.rule == RetentionPolicy.defaultRule ? "no_rule" : nil)
            try await record(chosen, for: request, identifier: identifier, account: reading.account, environment: reading.environment, now: now, on: connection)
            if let account = reading.account, let events, let answer {
                let change = EventChange(
                    productId: { if case .alternateProduct(_, let product, _) = answer { product } else { nil } }(),
                    retentionRule: chosen.rule, retentionAnswer: answer.kind, messageIdentifier: answer.messageIdentifier, offerId: offerId)
                let draft = EventDraft(
                    type: .subscriptionRetentionOffered, key: "retention:\(identifier.uuidString.lowercased())", account: account,
                    subscription: request.originalTransactionId, environment: reading.environment, change: change,
                    cause: EventCause(
                        eventId: identifier.uuidString.lowercased(), originalTransactionId: request.originalTransactionId,
                        signedDate: Date(timeIntervalSince1970: Double(request.signedDate) / 1000)))
                try await events.record([draft], now: now, on: connection)
            }
            return chosen
        }
    }

    /// Records, best effort and after the fact, that `request` got the fallback because deciding failed or ran late.
    public func recordFallback(_ request: RetentionRequestPayload, identifier: UUID, reason: String, now: Date) async {
        let answer = Answer(rule: RetentionPolicy.defaultRule, answer: policy.fallback.flatMap(Self.plainAnswer), fallbackReason: reason)
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await record(answer, for: request, identifier: identifier, account: nil, environment: nil, now: now, on: connection)
            }
        } catch {
            logger.notice("retention fallback not recorded", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Each rule's answers since `since`, with how many of those subscriptions stayed (``RetentionDecisions/ruleCounts(since:on:)``).
    public func ruleCounts(since: Date) async throws -> [RetentionDecisions.RuleCount] {
        try await client.withConnection { try await decisions.ruleCounts(since: since, on: $0) }
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

    private func record(
        _ answer: Answer, for request: RetentionRequestPayload, identifier: UUID, account: AccountID?, environment: String?, now: Date,
        on connection: PostgresConnection
    ) async throws {
        let body = try answer.answer.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let stored = try await decisions.record(
            RetentionDecisions.Decision(
                requestIdentifier: identifier, originalTransactionId: request.originalTransactionId, account: account,
                environment: environment ?? request.environment?.rawValue ?? "", productId: request.productId, rule: answer.rule,
                answerKind: answer.answer?.kind, answer: body, fallbackReason: answer.fallbackReason, signedDate: request.signedDate,
                decidedAt: now),
            on: connection)
        guard stored else { throw Replayed() }
    }

    /// The policy's facts from a reading: the product's tier and group, whole days and calendar months.
    static func facts(_ reading: RetentionDecisions.Reading, catalogue: TierCatalogue, now: Date) -> RetentionFacts {
        let tier = catalogue.tier(ofProduct: reading.productId)?.tier
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let months = max(0, calendar.dateComponents([.month], from: reading.firstSeen, to: now).month ?? 0)
        let days = reading.lastSpend.map { max(0, Int(now.timeIntervalSince($0) / 86_400)) }
        return RetentionFacts(
            productId: reading.productId, accountKnown: reading.account != nil, tier: tier?.id, group: tier?.group, spentShare: reading.spentShare, daysSinceLastSpend: days,
            monthsSubscribed: months, topUpsBought: reading.topUpsBought, offersSigned: reading.offersSigned)
    }
}
