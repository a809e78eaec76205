import AppStoreModels
import Foundation
import SignedData

/// Why a renewal date is extended (Apple's `extendReasonCode`).
public enum ExtendReason: Int32, Sendable, CaseIterable, Codable {
    case undeclared = 0
    case customerSatisfaction = 1
    case other = 2
    case serviceIssueOrOutage = 3

    /// The words the admin API and dashboard use for it.
    public var text: String {
        switch self {
        case .undeclared: "undeclared"
        case .customerSatisfaction: "customer_satisfaction"
        case .other: "other"
        case .serviceIssueOrOutage: "service_issue_or_outage"
        }
    }

    public init?(text: String) {
        guard let reason = Self.allCases.first(where: { $0.text == text }) else { return nil }
        self = reason
    }
}

/// A renewal-date extension as Apple's two extend endpoints take it: 1–90 days, a reason, and an identifier of the
/// caller's that names the request (a repeat with the same identifier is the same request).
public struct RenewalExtensionRequest: Sendable, Equatable {
    /// Apple's limit for `extendByDays`.
    public static let maximumDays = 90

    public var days: Int
    public var reason: ExtendReason
    public var requestIdentifier: String

    public init(days: Int, reason: ExtendReason, requestIdentifier: String) {
        self.days = days
        self.reason = reason
        self.requestIdentifier = requestIdentifier
    }
}

/// Apple's answer to Extend a Subscription Renewal Date.
public struct RenewalExtensionAnswer: Sendable, Equatable, Codable {
    public var success: Bool
    /// The subscription's new expiry, when it was extended.
    public var effectiveDate: Date?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
}

/// Apple's answer to Get Status of Subscription Renewal Date Extensions.
public struct MassExtensionStatus: Sendable, Equatable {
    public var requestIdentifier: String
    public var complete: Bool
    public var completeDate: Date?
    public var succeededCount: Int64?
    public var failedCount: Int64?
}

/// Apple's answer to Look Up Order ID.
public struct OrderLookup: Sendable, Equatable {
    /// Whether the order id is one of this app's.
    public var valid: Bool
    /// The in-app purchases of the order, verified.
    public var transactions: [TransactionPayload]
}

extension AppStoreServerClient {
    /// Look Up Order ID: the purchases of the order id on a customer's App Store receipt e-mail. Only Production
    /// purchases have order ids (Sandbox has no receipts), so it always asks Production.
    public func lookUpOrder(_ orderId: String) async throws(AppStoreServerError) -> OrderLookup {
        struct Response: Decodable {
            var status: Int32
            var signedTransactions: [String]?
        }
        let response: Response = try await send(.GET, "/inApps/v1/lookup/\(Self.escape(orderId))", environment: .production)
        var transactions: [TransactionPayload] = []
        for signed in response.signedTransactions ?? [] {
            transactions.append(try await verified { () async throws(VerificationError) in try await verifier.verifyTransaction(signed) })
        }
        return OrderLookup(valid: response.status == 0, transactions: transactions)
    }

    /// Extend a Subscription Renewal Date for one active paid subscription.
    public func extendRenewalDate(
        _ request: RenewalExtensionRequest, originalTransactionId: String, environment: AppStoreEnvironment
    ) async throws(AppStoreServerError) -> RenewalExtensionAnswer {
        struct Body: Encodable {
            var extendByDays: Int
            var extendReasonCode: Int32
            var requestIdentifier: String
        }
        struct Response: Decodable {
            var success: Bool?
            var effectiveDate: Int64?
            var originalTransactionId: String?
            var webOrderLineItemId: String?
        }
        let response: Response = try await send(
            .PUT, "/inApps/v1/subscriptions/extend/\(Self.escape(originalTransactionId))",
            body: Body(extendByDays: request.days, extendReasonCode: request.reason.rawValue, requestIdentifier: request.requestIdentifier),
            environment: environment)
        return RenewalExtensionAnswer(
            success: response.success ?? false, effectiveDate: response.effectiveDate.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            originalTransactionId: response.originalTransactionId, webOrderLineItemId: response.webOrderLineItemId)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of a product (in some storefronts, or all). Apple
    /// works through them over hours or days; ask ``massExtensionStatus(productId:requestIdentifier:environment:)``.
    public func extendRenewalDatesForAll(
        _ request: RenewalExtensionRequest, productId: String, storefronts: [String]?, environment: AppStoreEnvironment
    ) async throws(AppStoreServerError) {
        struct Body: Encodable {
            var extendByDays: Int
            var extendReasonCode: Int32
            var requestIdentifier: String
            var productId: String
            var storefrontCountryCodes: [String]?
        }
        struct Response: Decodable { var requestIdentifier: String? }
        let _: Response = try await send(
            .POST, "/inApps/v1/subscriptions/extend/mass",
            body: Body(
                extendByDays: request.days, extendReasonCode: request.reason.rawValue, requestIdentifier: request.requestIdentifier,
                productId: productId, storefrontCountryCodes: storefronts),
            environment: environment)
    }

    /// Get Status of Subscription Renewal Date Extensions.
    public func massExtensionStatus(productId: String, requestIdentifier: String, environment: AppStoreEnvironment)
        async throws(AppStoreServerError) -> MassExtensionStatus
    {
        struct Response: Decodable {
            var requestIdentifier: String?
            var complete: Bool?
            var completeDate: Int64?
            var succeededCount: Int64?
            var failedCount: Int64?
        }
        let response: Response = try await send(
            .GET, "/inApps/v1/subscriptions/extend/mass/\(Self.escape(productId))/\(Self.escape(requestIdentifier))", environment: environment)
        return MassExtensionStatus(
            requestIdentifier: response.requestIdentifier ?? requestIdentifier, complete: response.complete ?? false,
            completeDate: response.completeDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }, succeededCount: response.succeededCount,
            failedCount: response.failedCount)
    }

    /// Get Refund History (v2), one page, verified: the customer's refunded purchases; pass the revision back while
    /// `hasMore`.
    public func refundHistory(transactionId: String, revision: String?, environment: AppStoreEnvironment)
        async throws(AppStoreServerError) -> (transactions: [TransactionPayload], revision: String?, hasMore: Bool)
    {
        try await transactionPage("/inApps/v2/refund/lookup/\(Self.escape(transactionId))", revision: revision, environment: environment)
    }
}
