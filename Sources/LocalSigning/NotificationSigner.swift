import AppStoreModels
import Entitlements
import Foundation

/// Builds signed App Store Server Notifications V2 — envelope and nested transaction / renewal info, each a JWS of
/// its own — with a ``JWSSigner``.
public struct NotificationSigner: Sendable {
    public let signer: JWSSigner
    public let bundleId: String
    public let environment: AppStoreEnvironment
    public let appAppleId: Int64?

    public init(signer: JWSSigner, bundleId: String, environment: AppStoreEnvironment = .sandbox, appAppleId: Int64? = nil) {
        self.signer = signer
        self.bundleId = bundleId
        self.environment = environment
        self.appAppleId = appAppleId
    }

    /// Signs `event` as a notification and returns the `signedPayload`.
    public func signedPayload(for event: SimulatedEvent, notificationUUID: UUID = UUID()) throws -> String {
        var data = NotificationData(
            appAppleId: appAppleId, bundleId: bundleId, bundleVersion: "1", environment: environment,
            status: event.status
        )
        data.consumptionRequestReason = event.consumptionRequestReason
        if let transaction = event.transaction { data.signedTransactionInfo = try signer.sign(transaction) }
        if let renewal = event.renewalInfo { data.signedRenewalInfo = try signer.sign(renewal) }
        let payload = NotificationPayload(
            notificationType: event.notificationType, subtype: event.subtype,
            notificationUUID: notificationUUID.uuidString.lowercased(), data: data, signedDate: event.signedDate
        )
        return try signer.sign(payload)
    }

    /// The HTTP body Apple would POST for `event`.
    public func requestBody(for event: SimulatedEvent, notificationUUID: UUID = UUID()) throws -> Data {
        try JSONEncoder().encode(["signedPayload": signedPayload(for: event, notificationUUID: notificationUUID)])
    }
}
