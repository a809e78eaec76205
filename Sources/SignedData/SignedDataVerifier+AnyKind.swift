import AppStoreModels
import Foundation

/// Any App Store signed payload, verified, with its kind recognised from its fields.
public enum VerifiedSignedData: Sendable {
    case notification(VerifiedNotification)
    case transaction(TransactionPayload)
    case renewalInfo(RenewalInfoPayload)
    case appTransaction(AppTransactionPayload)
}

extension SignedDataVerifier {
    /// Verifies a JWS of any kind — notification, transaction, renewal info, app transaction — recognised by its
    /// fields (for operators debugging a payload). Identity is checked for every kind but notifications, whose
    /// verdict comes from ``identityVerdict(for:)``.
    public func verifyAnyKind(_ text: String) async throws(VerificationError) -> VerifiedSignedData {
        let jws = try CompactJWS(parsing: text)
        guard let object = try? JSONSerialization.jsonObject(with: jws.payload) as? [String: Any] else {
            throw .malformed("payload is not a JSON object")
        }
        if object["notificationType"] != nil { return .notification(try await verifyNotification(text)) }
        if object["transactionId"] != nil { return .transaction(try await verifyTransaction(text)) }
        if object["receiptType"] != nil {
            let app = try await verify(text, as: AppTransactionPayload.self, signedDate: \.receiptCreationDate)
            if let problem = identityProblem(of: app) {
                throw .identity(problem)
            }
            return .appTransaction(app)
        }
        if object["originalTransactionId"] != nil { return .renewalInfo(try await verifyRenewalInfo(text)) }
        throw .malformed("payload is not a notification, transaction, renewal info or app transaction")
    }
}
