import AppStoreModels
import Foundation
import PayloadDecoding
import Subscriptions
import TestSupport
import Testing

/// Every type, subtype and field of Apple's published lists (``AppleLists``, with their dates) is read by our models:
/// nothing Apple sends is dropped or fails to decode.
@Suite("Apple's lists, checked")
struct AppleListsTests {
    @Test("every notification type and subtype is a known case, and keeps its name")
    func typesAndSubtypes() {
        for (name, since) in AppleLists.notificationTypes {
            let type = NotificationType(name)
            #expect(type != .unknown(name) && type.name == name, "\(name) (since \(since)) is not a known notification type")
        }
        for (name, since) in AppleLists.subtypes {
            #expect(NotificationSubtype(name) != .unknown(name), "\(name) (since \(since)) is not a known subtype")
        }
    }

    /// Decodes every field with the decoder the verifier uses, encodes the model again, and names each field that did
    /// not come back (or came back changed).
    static func lost<Model: Codable>(_ type: Model.Type, _ fields: [AppleLists.Field]) throws -> [String] {
        let model = try PayloadDecoder().decode(Model.self, from: Array(AppleLists.document(fields).utf8))
        let encoded = try PayloadDecoder().decode([String: JSONValue].self, from: Array(try JSONEncoder().encode(model)))
        return try fields.compactMap { field in
            guard let value = encoded[field.name] else { return "\(field.name) (since \(field.since))" }
            let sample = try PayloadDecoder().decode(JSONValue.self, from: Array(field.sample.utf8))
            return value == sample ? nil : "\(field.name) changed: \(value) for \(sample)"
        }
    }

    @Test("transactions, renewal infos, app transactions, notifications and retention requests keep every field")
    func fields() throws {
        let transactionPayloadLost = try Self.lost(TransactionPayload.self, AppleLists.transaction)
        #expect(transactionPayloadLost.isEmpty, "\(transactionPayloadLost)")
        let renewalInfoPayloadLost = try Self.lost(RenewalInfoPayload.self, AppleLists.renewalInfo)
        #expect(renewalInfoPayloadLost.isEmpty, "\(renewalInfoPayloadLost)")
        let appTransactionPayloadLost = try Self.lost(AppTransactionPayload.self, AppleLists.appTransaction)
        #expect(appTransactionPayloadLost.isEmpty, "\(appTransactionPayloadLost)")
        let notificationPayloadLost = try Self.lost(NotificationPayload.self, AppleLists.notification)
        #expect(notificationPayloadLost.isEmpty, "\(notificationPayloadLost)")
        let retentionRequestPayloadLost = try Self.lost(RetentionRequestPayload.self, AppleLists.retentionRequest)
        #expect(retentionRequestPayloadLost.isEmpty, "\(retentionRequestPayloadLost)")
    }
}
