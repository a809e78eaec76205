import Foundation
import Hummingbird
import Persistence

/// A renewal-date extension as the admin API shows it: every field present, `null` where it does not apply.
struct RenewalExtensionDocument: ResponseEncodable, Sendable {
    let record: RenewalExtensionRecords.Record

    enum CodingKeys: String, CodingKey {
        case requestIdentifier, kind, environment, subscription, accountId, productId, storefrontCountryCodes, days, reasonCode, requestedBy
        case requestedAt, answeredAt, success, effectiveDate, error, complete, completeDate, succeededCount, failedCount
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.requestIdentifier, forKey: .requestIdentifier)
        try container.encode(record.kind.rawValue, forKey: .kind)
        try container.encode(record.environment, forKey: .environment)
        try container.encode(record.subscription, forKey: .subscription)
        try container.encode(record.accountId, forKey: .accountId)
        try container.encode(record.productId, forKey: .productId)
        try container.encode(record.storefronts, forKey: .storefrontCountryCodes)
        try container.encode(record.days, forKey: .days)
        try container.encode(record.reasonCode, forKey: .reasonCode)
        try container.encode(record.requestedBy, forKey: .requestedBy)
        try container.encode(record.requestedAt, forKey: .requestedAt)
        try container.encode(record.answeredAt, forKey: .answeredAt)
        try container.encode(record.succeeded, forKey: .success)
        try container.encode(record.effectiveDate, forKey: .effectiveDate)
        try container.encode(record.error, forKey: .error)
        try container.encode(record.complete, forKey: .complete)
        try container.encode(record.completeDate, forKey: .completeDate)
        try container.encode(record.succeededCount, forKey: .succeededCount)
        try container.encode(record.failedCount, forKey: .failedCount)
    }
}
