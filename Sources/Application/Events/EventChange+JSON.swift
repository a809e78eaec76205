import Events
import Foundation

// An event's `change` and `cause` as `JSONEncoder` writes them with sorted keys and ISO 8601 dates (absent members
// left out), written by hand as the status is: every stored event's body has both. `StatusJSONTests` holds them to
// the `Codable` forms, which define them.

extension EventChange {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.presentMember("amount", amount)
        writer.presentMember("answerBy", date: answerBy)
        writer.presentMember("appTransactionId", appTransactionId)
        writer.presentMember("bucket", bucket)
        writer.presentMember("deadline", date: deadline)
        writer.presentMember("direction", direction)
        writer.presentMember("effective", effective)
        writer.presentMember("expiresAt", date: expiresAt)
        writer.presentMember("fromAccountId", fromAccountId)
        writer.presentMember("fromProductId", fromProductId)
        writer.presentMember("grantId", grantId)
        writer.presentMember("group", group)
        writer.presentMember("messageIdentifier", messageIdentifier)
        writer.presentMember("meter", meter)
        writer.presentMember("offerId", offerId)
        writer.presentArray("offerIds", offerIds)
        writer.presentMember("previousExpiresAt", date: previousExpiresAt)
        writer.presentMember("productId", productId)
        writer.presentMember("reason", reason)
        writer.presentMember("refundRequestId", refundRequestId)
        writer.presentMember("remaining", remaining)
        writer.presentMember("retentionAnswer", retentionAnswer)
        writer.presentMember("retentionRule", retentionRule)
        writer.presentArray("sources", sources)
        writer.presentMember("store", store)
        writer.presentMember("threshold", threshold)
        writer.presentMember("tier", tier)
        writer.presentMember("toAccountId", toAccountId)
        writer.presentMember("toProductId", toProductId)
        writer.presentMember("transactionId", transactionId)
        writer.endObject()
    }
}

extension EventCause {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.presentMember("eventId", eventId)
        writer.presentMember("notificationType", notificationType)
        writer.presentMember("originalTransactionId", originalTransactionId)
        writer.presentMember("signedDate", date: signedDate)
        writer.presentMember("subtype", subtype)
        writer.presentMember("transactionId", transactionId)
        writer.endObject()
    }
}

extension JSONWriter {
    /// A member only when it has a value, as `encodeIfPresent` writes it.
    fileprivate mutating func presentMember(_ name: String, _ value: String?) {
        if let value { member(name, value) }
    }

    fileprivate mutating func presentArray(_ name: String, _ values: [String]?) {
        guard let values else { return }
        key(name)
        beginArray()
        for value in values {
            element()
            string(value)
        }
        endArray()
    }

    fileprivate mutating func presentMember(_ name: String, _ value: Int64?) {
        if let value { member(name, value) }
    }

    fileprivate mutating func presentMember(_ name: String, date value: Date?) {
        if let value { member(name, date: value) }
    }
}
