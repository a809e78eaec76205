import AppStoreModels
import Foundation

/// Everything signed that Storekeeper holds about one subscription (one `originalTransactionId`): each transaction
/// at its newest signed version, the newest renewal info, Apple's reports (notification types, subtypes and
/// `data.status`) and the accounts that claimed transactions.
///
/// Every fact merges as "newest version per key", ties broken by event id, so the facts — and everything derived
/// from them — are the same for any delivery order and any number of duplicates.
public struct SubscriptionFacts: Sendable, Equatable {
    public let originalTransactionId: String
    /// Each transaction by `transactionId`, at its newest signed version.
    public private(set) var transactions: [String: Signed<TransactionPayload>] = [:]
    /// Each transaction's `appAccountToken`, from its newest version that carries one (a copy without it — a Server
    /// API answer, say — does not erase who bought it).
    public private(set) var accountTokens: [String: Signed<String>] = [:]
    /// The newest renewal info.
    public private(set) var renewalInfo: Signed<RenewalInfoPayload>?
    /// What Apple said, one report per notification or Server API snapshot, by event id.
    public private(set) var reports: [String: Report] = [:]
    /// Accounts that posted a transaction, by event id.
    public private(set) var claims: [String: Claim] = [:]
    /// The transactions of which some signed version carried a prorated refund (``PaidPeriod/Revocation/prorated``),
    /// whatever their newest says: once reversed or refunded in full, the refund's claw-backs are given back, also
    /// what they took from a former owner's top-ups, which only this says to look for (``PaidPeriod/hadProratedRefund``).
    public private(set) var proratedRefunds: Set<String> = []
    /// The newest event of any kind.
    public private(set) var newestEvent: EventPosition?
    public private(set) var environment: AppStoreEnvironment = .unknown

    /// A signed value and where its version sits in Apple's order.
    public struct Signed<Value: Sendable & Equatable>: Sendable, Equatable {
        public var value: Value
        public var position: EventPosition
    }

    /// One notification or Server API snapshot: what it said about the subscription as a whole.
    public struct Report: Sendable, Equatable {
        public var type: NotificationType
        public var typeName: String
        public var subtype: NotificationSubtype
        public var subtypeName: String?
        public var position: EventPosition
        /// Apple's `data.status` (or the Server API's status).
        public var appleStatus: Int32?
        /// The transaction the report carried.
        public var transactionId: String
    }

    /// A transaction an account posted.
    public struct Claim: Sendable, Equatable {
        public var account: AccountID
        public var transactionId: String
        public var position: EventPosition
    }

    public init(originalTransactionId: String) { self.originalTransactionId = originalTransactionId }

    /// The facts of a set of events (of one subscription; events of others are ignored).
    public init?(events: [SubscriptionEvent]) {
        guard let first = events.first else { return nil }
        self.init(originalTransactionId: first.transaction.originalTransactionId)
        for event in events { merge(event) }
    }

    /// Adds what `event` says; a version older than the one held changes nothing.
    public mutating func merge(_ event: SubscriptionEvent) {
        guard event.transaction.originalTransactionId == originalTransactionId else { return }
        let position = event.position
        if newestEvent.map({ $0 < position }) ?? true {
            newestEvent = position
            environment = event.environment
        }
        // A transaction's version is ordered by its own signedDate: a claim may post a copy signed long ago.
        let transaction = event.transaction
        let transactionPosition = EventPosition(signedDate: transaction.signedDate ?? event.signedDate, eventId: event.id)
        if transactions[transaction.transactionId].map({ $0.position < transactionPosition }) ?? true {
            transactions[transaction.transactionId] = Signed(value: transaction, position: transactionPosition)
        }
        if transaction.revocationDate != nil,
            PaidPeriod.Revocation.isProrated(type: transaction.revocationType, milliPercent: transaction.revocationPercentage)
        {
            proratedRefunds.insert(transaction.transactionId)
        }
        if let token = transaction.appAccountToken,
            accountTokens[transaction.transactionId].map({ $0.position < transactionPosition }) ?? true
        {
            accountTokens[transaction.transactionId] = Signed(value: token, position: transactionPosition)
        }
        if let renewal = event.renewalInfo {
            let renewalPosition = EventPosition(signedDate: renewal.signedDate ?? event.signedDate, eventId: event.id)
            if renewalInfo.map({ $0.position < renewalPosition }) ?? true {
                renewalInfo = Signed(value: renewal, position: renewalPosition)
            }
        }
        if let account = event.claimant {
            claims[event.id] = Claim(account: account, transactionId: transaction.transactionId, position: position)
        } else {
            reports[event.id] = Report(
                type: NotificationType(event.notificationType), typeName: event.notificationType,
                subtype: NotificationSubtype(event.subtype), subtypeName: event.subtype, position: position,
                appleStatus: event.appleStatus, transactionId: transaction.transactionId)
        }
    }

    /// Apple's reports, oldest first.
    public var reportsInOrder: [Report] { reports.values.sorted { $0.position < $1.position } }
}
