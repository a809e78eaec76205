import Credits
import Entitlements
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Operators' grants (`/admin/accounts/{id}/grants`, `storekeeper grants`): add one, list an account's, end one now.
/// Each write settles the grant in its own transaction under the account's lock (``SourceSettlement``): its first
/// credit window, its events, its next change.
public struct OperatorGrants: Sendable {
    /// What a grant asks for.
    public struct Request: Sendable {
        public var tier: String
        /// `nil`: for good.
        public var endsAt: Date?
        public var reason: String
        /// Where the grant was asked for: `admin-api`, `dashboard`, `cli`.
        public var createdBy: String?
        /// The same key for the same account grants once: a retried request or a form sent twice.
        public var idempotencyKey: String?

        public init(tier: String, endsAt: Date?, reason: String, createdBy: String?, idempotencyKey: String? = nil) {
            self.tier = tier
            self.endsAt = endsAt
            self.reason = reason
            self.createdBy = createdBy
            self.idempotencyKey = idempotencyKey
        }
    }

    /// Why a grant was refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The longest reason kept.
    public static let maximumReasonLength = OperatorReason.maximumLength

    private let client: PostgresClient
    private let credits: CreditLedger
    private let sources: EntitlementSources
    private let settlement: SourceSettlement
    private let cache: AccountStatusCache?
    private let logger: Logger

    public init(client: PostgresClient, credits: CreditLedger, settlement: SourceSettlement, cache: AccountStatusCache? = nil, logger: Logger) {
        self.client = client
        self.credits = credits
        self.sources = EntitlementSources(logger: logger)
        self.settlement = settlement
        self.cache = cache
        self.logger = logger
    }

    /// Why `request` cannot be granted at `now`, if it cannot: an unknown tier, an end not in the future, a reason
    /// empty or longer than 500 characters.
    public func refusal(of request: Request, now: Date) -> Refusal? {
        let catalogue = credits.catalogue
        guard catalogue.tier(id: request.tier) != nil else {
            return Refusal(description: "tier \(request.tier) is not in the catalogue (tiers: \(catalogue.tiers.map(\.id).joined(separator: ", ")))")
        }
        if let end = request.endsAt, end <= now {
            return Refusal(description: "the grant would end at \(end.formatted(.iso8601)), which is not in the future")
        }
        if let problem = OperatorReason.problem(request.reason) { return Refusal(description: problem) }
        if let key = request.idempotencyKey,
            key.isEmpty || key.utf8.count > 255 || key.controlCharacterScan == .control
        {
            return Refusal(description: "idempotencyKey must be 1–255 bytes without control characters")
        }
        return nil
    }

    /// Grants `request` to `account` from `now`: the grant as stored, and whether this call made it (`false`: its
    /// idempotency key had made it before, and that grant is returned unchanged).
    public func add(_ request: Request, to account: AccountID, now: Date) async throws -> (record: EntitlementRecord, created: Bool) {
        if let refusal = refusal(of: request, now: now) { throw refusal }
        let now = Self.milliseconds(now)
        defer { cache?.invalidate(account) }
        let record = EntitlementRecord(
            id: UUID().lowercasedText, kind: .grant, store: .operatorGrant, tier: request.tier, startsAt: now,
            endsAt: request.endsAt.map(Self.milliseconds), reason: request.reason, createdBy: request.createdBy)
        let stored = try await client.withFencedTransaction(logger: logger) { connection in
            try await credits.lockAccount(account, on: connection)
            let stored = try await sources.insertGrant(record, account: account, requestKey: request.idempotencyKey, on: connection)
            if stored.inserted { try await settlement.settle(record, account: account, now: now, cause: Self.cause(record), on: connection) }
            return stored
        }
        guard stored.inserted else { return (stored.record, false) }
        logger.notice(
            "grant added",
            metadata: ["grant.id": "\(record.id)", "account.id": "\(account)", "tier": "\(request.tier)", "operator": "\(request.createdBy ?? "-")"])
        return (record, true)
    }

    /// Every grant of `account`, ended or not, newest first.
    public func grants(of account: AccountID) async throws -> [EntitlementRecord] {
        try await client.withFencedConnection { try await sources.sources(of: account, kind: .grant, on: $0) }
    }

    /// Ends grant `id` now: the grant as it is afterwards and its account; `nil` when there is no such grant. A grant
    /// that had ended already is returned as it was.
    public func end(_ id: String, now: Date) async throws -> (record: EntitlementRecord, account: AccountID?, ended: Bool)? {
        let now = Self.milliseconds(now)
        let result: (record: EntitlementRecord, account: AccountID?, ended: Bool)? = try await client.withFencedTransaction(logger: logger) {
            connection in
            guard let (_, owner) = try await sources.source(id, on: connection) else { return nil }
            if let owner { try await credits.lockAccount(owner, on: connection) }
            guard let ((record, account), ended) = try await sources.endGrant(id, at: now, on: connection) else { return nil }
            if ended, let account { try await settlement.settle(record, account: account, now: now, cause: Self.cause(record), on: connection) }
            return (record, account, ended)
        }
        if let account = result?.account { cache?.invalidate(account) }
        return result
    }

    /// `date` cut to its millisecond, as stored: never later than the `now` it came from, so a grant added or ended
    /// "now" has started or ended by then.
    static func milliseconds(_ date: Date) -> Date { Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000) }

    static func cause(_ record: EntitlementRecord) -> EventCause {
        EventCause(eventId: "grant:\(record.id)", notificationType: "OPERATOR_GRANT")
    }
}

/// A grant's end as operators write it: an `endsAt` (RFC 3339) or a `duration` (ISO 8601 `P<n>D`, `P<n>W`, `P<n>M`,
/// `P<n>Y`, counted from now, months on the calendar as credit windows are); neither: for good.
public enum GrantEnd {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The longest grant an operator can write as a duration (longer: `"lifetime": true`).
    static let longestMonths = 1200
    static let longestDays = 36_500

    public static func date(endsAt: String?, duration: String?, now: Date) throws(Problem) -> Date? {
        if let endsAt {
            guard let date = RFC3339.date(endsAt) else {
                throw Problem(description: "endsAt \(endsAt.prefix(64)) is not an RFC 3339 time (2027-01-31T00:00:00Z)")
            }
            return date
        }
        guard let duration else { return nil }
        guard let period = BillingPeriod(iso8601: duration) else {
            throw Problem(
                description: "duration \(duration.prefix(64)) is not an ISO 8601 duration of P<n>D, P<n>W, P<n>M or P<n>Y of at most 100 years")
        }
        guard period.months <= longestMonths, period.days <= longestDays else {
            throw Problem(description: "duration \(duration.prefix(64)) is longer than 100 years; grant it for good instead")
        }
        if period.months > 0 { return CreditCalendar.monthlyBoundary(anchor: now, month: period.months) }
        return now.addingTimeInterval(Double(period.days) * 86_400)
    }
}
