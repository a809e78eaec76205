import Foundation
import Hummingbird
import Persistence

/// A renewal-date extension as the admin API shows it: every field present, `null` where it does not apply.
struct RenewalExtensionDocument: ResponseEncodable, Sendable {
    var requestIdentifier: String
    var kind: String
    var environment: String
    @Nullable var subscription: String?
    @Nullable var accountId: String?
    @Nullable var productId: String?
    @Nullable var storefrontCountryCodes: [String]?
    var days: Int
    var reasonCode: Int
    var requestedBy: String
    var requestedAt: Date
    @Nullable var answeredAt: Date?
    @Nullable var success: Bool?
    @Nullable var effectiveDate: Date?
    @Nullable var error: String?
    var complete: Bool
    @Nullable var completeDate: Date?
    @Nullable var succeededCount: Int64?
    @Nullable var failedCount: Int64?

    init(record: RenewalExtensionRecords.Record) {
        requestIdentifier = record.requestIdentifier
        kind = record.kind.rawValue
        environment = record.environment.rawValue
        subscription = record.subscription
        accountId = record.accountId
        productId = record.productId
        storefrontCountryCodes = record.storefronts
        days = record.days
        reasonCode = record.reasonCode
        requestedBy = record.requestedBy
        requestedAt = record.requestedAt
        answeredAt = record.answeredAt
        success = record.succeeded
        effectiveDate = record.effectiveDate
        error = record.error
        complete = record.complete
        completeDate = record.completeDate
        succeededCount = record.succeededCount
        failedCount = record.failedCount
    }
}
