import AppStoreModels
import Foundation

/// `GET /inApps/v1/subscriptions/{transactionId}`, as sent.
struct StatusResponse: Decodable {
    struct Group: Decodable {
        var subscriptionGroupIdentifier: String?
        var lastTransactions: [LastTransaction]
    }

    struct LastTransaction: Decodable {
        var status: Int32
        var originalTransactionId: String
        var signedTransactionInfo: String
        var signedRenewalInfo: String?
    }

    var data: [Group]
}

/// One subscription's status from Get All Subscription Statuses, its signed items verified.
public struct SubscriptionStatusItem: Sendable, Equatable {
    /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int32
    public var transaction: TransactionPayload
    public var renewalInfo: RenewalInfoPayload?
    /// The JWS the items were verified from, transaction then renewal info, one per line.
    public var signedData: String
}

/// The filter of Get Notification History.
public struct NotificationHistoryQuery: Sendable, Equatable {
    public var startDate: Date
    public var endDate: Date
    public var onlyFailures: Bool
    public var environment: AppStoreEnvironment

    public init(startDate: Date, endDate: Date, onlyFailures: Bool, environment: AppStoreEnvironment) {
        self.startDate = startDate
        self.endDate = endDate
        self.onlyFailures = onlyFailures
        self.environment = environment
    }
}

/// One page of Notification History: the `signedPayload`s (verified again when they go through the intake).
public struct NotificationHistoryPage: Sendable, Equatable {
    public var signedPayloads: [String]
    public var paginationToken: String?
    public var hasMore: Bool
}

struct NotificationHistoryResponse: Decodable {
    struct Item: Decodable { var signedPayload: String }
    var notificationHistory: [Item]
    var hasMore: Bool?
    var paginationToken: String?
}

/// What Get Test Notification Status says of one test notification.
public struct TestNotificationStatus: Sendable, Equatable {
    public struct Attempt: Sendable, Equatable {
        public var date: Date
        /// `SUCCESS`, or why Apple could not deliver (`TIMED_OUT`, `TLS_ISSUE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …).
        public var result: String
    }

    public var attempts: [Attempt]
    public var delivered: Bool { attempts.contains { $0.result == "SUCCESS" } }
}

struct TestNotificationStatusResponse: Decodable {
    struct Attempt: Decodable {
        var attemptDate: Int64
        var sendAttemptResult: String
    }
    var signedPayload: String?
    var sendAttempts: [Attempt]?
}

struct ErrorResponse: Decodable {
    var errorCode: Int64?
    var errorMessage: String?
}
