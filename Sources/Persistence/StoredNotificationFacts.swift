import AppStoreModels
import Foundation
import PayloadDecoding
import PostgresNIO
import SignedData

/// A stored notification's verified facts. A row stored as signed parts has no `decoded` copy: its payloads, kept as
/// the JSON Apple signed, are the facts. Rows stored verbatim, rejected for their content, stored before parts
/// existed, or whose parts were cleared after the retention period carry `decoded`.
public enum StoredNotificationFacts {
    /// The fields of the outer payload that hold nested JWS, as the parts name them.
    public static let transactionField = "signedTransactionInfo"
    public static let renewalInfoField = "signedRenewalInfo"
    public static let appTransactionField = "signedAppTransactionInfo"

    /// The facts of a row from its `decoded` copy, or else its signed parts; `nil` when it has neither.
    static func notification(decoded: String?, parts: ByteBuffer?) throws -> VerifiedNotification? {
        let decoder = PayloadDecoder()
        if let decoded { return try decoder.decode(VerifiedNotification.self, from: Array(decoded.utf8)) }
        guard let parts else { return nil }
        let signed = try SignedParts(storedValue: parts)
        var payload = try decoder.decode(NotificationPayload.self, from: Array(signed.parts[0].body))
        payload.data?.signedTransactionInfo = nil
        payload.data?.signedRenewalInfo = nil
        payload.appData?.signedAppTransactionInfo = nil
        func nested<Payload: Decodable>(_ type: Payload.Type, _ field: String) throws -> Payload? {
            try signed.body(ofNested: field).map { try decoder.decode(type, from: Array($0)) }
        }
        return VerifiedNotification(
            payload: payload, transaction: try nested(TransactionPayload.self, transactionField),
            renewalInfo: try nested(RenewalInfoPayload.self, renewalInfoField),
            appTransaction: try nested(AppTransactionPayload.self, appTransactionField))
    }

    /// The `decoded` copy of `notification`: its facts without the nested JWS texts.
    public static func decodedText(of notification: VerifiedNotification) throws -> String {
        var facts = notification
        facts.payload.data?.signedTransactionInfo = nil
        facts.payload.data?.signedRenewalInfo = nil
        facts.payload.appData?.signedAppTransactionInfo = nil
        return String(decoding: try JSONEncoder().encode(facts), as: UTF8.self)
    }
}
