import AppStoreModels
import Foundation
import PayloadDecoding

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
        guard let kind = try? SignedDataVerifier.decoder.decode(KindFields.self, from: jws.payload) else {
            throw .malformed("payload is not a JSON object")
        }
        if kind.has(.notificationType) { return .notification(try await verifyNotification(text)) }
        if kind.has(.transactionId) { return .transaction(try await verifyTransaction(text)) }
        if kind.has(.receiptType) {
            let app = try await verify(text, as: AppTransactionPayload.self, validationDate: .receiptCreationDate)
            if let problem = identityProblem(of: app) {
                throw .identity(problem)
            }
            return .appTransaction(app)
        }
        if kind.has(.originalTransactionId) { return .renewalInfo(try await verifyRenewalInfo(text)) }
        throw .malformed("payload is not a notification, transaction, renewal info or app transaction")
    }
}

/// Which of the fields that tell the kinds apart a payload has (presence only: values are read after verification).
private struct KindFields: Decodable {
    enum Key: String, CodingKey, CaseIterable { case notificationType, transactionId, receiptType, originalTransactionId }
    private var present: Set<Key> = []

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        present = Set(Key.allCases.filter(container.contains))
    }

    func has(_ key: Key) -> Bool { present.contains(key) }
}
