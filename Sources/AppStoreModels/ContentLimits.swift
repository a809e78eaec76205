import PayloadDecoding

/// The range of authentic content Storekeeper acts on. A payload can be correctly signed and still carry values no
/// real purchase has — a date in the year 292 million, a negative price, a NUL byte, a 100 KB product id — and those
/// would trap in date arithmetic, be refused by PostgreSQL, or overflow an index. Such a payload is recorded as
/// `rejected_content` with the reason ``contentProblem`` gives, and changes nothing.
public enum ContentLimits {
    /// Milliseconds since 1970 from 1970-01-01 to 9999-12-31T23:59:59.999Z: every date a database or certificate
    /// library can represent.
    public static let dates: ClosedRange<Int64> = 0...253_402_300_799_999
    /// Transaction ids, product ids, offer ids and the like (Apple's are below 100 bytes): these are keys and index
    /// entries.
    public static let identifierBytes = 256
    /// Any other text field.
    public static let textBytes = 4_096
    /// Prices in milliunits of the currency: up to a billion units.
    public static let prices: ClosedRange<Int64> = 0...1_000_000_000_000
    /// Items bought at once.
    public static let quantities: ClosedRange<Int64> = 1...10_000
    /// `revocationPercentage` is in thousandths of a percent.
    public static let milliPercentages: ClosedRange<Int64> = 0...100_000
    /// Small enumerations Apple sends as integers (status, offer type, reasons).
    public static let codes: ClosedRange<Int64> = -1...1_000
}

/// A walk over a payload's fields that keeps the first value outside ``ContentLimits``.
struct ContentInspection {
    private(set) var problem: String?

    mutating func date(_ name: String, _ value: Int64?) {
        guard problem == nil, let value, !ContentLimits.dates.contains(value) else { return }
        problem = "\(name) \(value) is not a date between 1970 and 9999"
    }

    mutating func number(_ name: String, _ value: (some BinaryInteger)?, in range: ClosedRange<Int64>) {
        guard problem == nil, let value else { return }
        guard let exact = Int64(exactly: value), range.contains(exact) else {
            problem = "\(name) \(value) is outside \(range.lowerBound)...\(range.upperBound)"
            return
        }
    }

    mutating func identifier(_ name: String, _ value: String?) { text(name, value, limit: ContentLimits.identifierBytes) }

    mutating func text(_ name: String, _ value: String?, limit: Int = ContentLimits.textBytes) {
        guard problem == nil, let value else { return }
        if value.utf8.count > limit {
            problem = "\(name) is \(value.utf8.count) bytes long (at most \(limit))"
        } else if value.utf8.contains(0) {
            problem = "\(name) contains a NUL character"
        }
    }

    mutating func json(_ name: String, _ value: JSONValue?) {
        guard problem == nil, let value else { return }
        switch value {
        case .null, .bool, .number: break
        case .string(let text): self.text(name, text)
        case .array(let elements): for element in elements { json(name, element) }
        case .object(let members):
            for (key, member) in members {
                text("\(name) key", key, limit: ContentLimits.identifierBytes)
                json(name, member)
            }
        }
    }
}

extension TransactionPayload {
    /// Why this transaction's content is outside ``ContentLimits``; `nil` when it is fine.
    public var contentProblem: String? {
        var inspection = ContentInspection()
        for (name, value) in [
            ("transactionId", transactionId), ("originalTransactionId", originalTransactionId),
            ("webOrderLineItemId", webOrderLineItemId), ("bundleId", bundleId), ("productId", productId),
            ("subscriptionGroupIdentifier", subscriptionGroupIdentifier), ("appAccountToken", appAccountToken),
            ("offerIdentifier", offerIdentifier), ("appTransactionId", appTransactionId), ("storefront", storefront),
            ("storefrontId", storefrontId), ("currency", currency), ("environment", environment?.rawValue),
        ] {
            inspection.identifier(name, value)
        }
        for (name, value) in [
            ("type", type), ("inAppOwnershipType", inAppOwnershipType), ("revocationType", revocationType),
            ("offerDiscountType", offerDiscountType), ("offerPeriod", offerPeriod), ("transactionReason", transactionReason),
            ("billingPlanType", billingPlanType),
        ] {
            inspection.text(name, value)
        }
        for (name, value) in [
            ("purchaseDate", purchaseDate), ("originalPurchaseDate", originalPurchaseDate), ("expiresDate", expiresDate),
            ("signedDate", signedDate), ("revocationDate", revocationDate),
            ("commitmentInfo.commitmentExpiresDate", commitmentInfo?.commitmentExpiresDate),
        ] {
            inspection.date(name, value)
        }
        inspection.number("quantity", quantity, in: ContentLimits.quantities)
        inspection.number("price", price, in: ContentLimits.prices)
        inspection.number("commitmentInfo.commitmentPrice", commitmentInfo?.commitmentPrice, in: ContentLimits.prices)
        inspection.number("revocationPercentage", revocationPercentage, in: ContentLimits.milliPercentages)
        inspection.number("revocationReason", revocationReason, in: ContentLimits.codes)
        inspection.number("offerType", offerType, in: ContentLimits.codes)
        inspection.number("commitmentInfo.billingPeriodNumber", commitmentInfo?.billingPeriodNumber, in: ContentLimits.codes)
        inspection.number("commitmentInfo.totalBillingPeriods", commitmentInfo?.totalBillingPeriods, in: ContentLimits.codes)
        inspection.json("advancedCommerceInfo", advancedCommerceInfo)
        return inspection.problem
    }
}

extension RenewalInfoPayload {
    /// Why this renewal info's content is outside ``ContentLimits``; `nil` when it is fine.
    public var contentProblem: String? {
        var inspection = ContentInspection()
        for (name, value) in [
            ("originalTransactionId", originalTransactionId), ("productId", productId), ("autoRenewProductId", autoRenewProductId),
            ("offerIdentifier", offerIdentifier), ("environment", environment?.rawValue), ("currency", currency),
            ("appAccountToken", appAccountToken), ("appTransactionId", appTransactionId),
            ("commitmentInfo.commitmentAutoRenewProductId", commitmentInfo?.commitmentAutoRenewProductId),
        ] {
            inspection.identifier(name, value)
        }
        for (name, value) in [
            ("offerDiscountType", offerDiscountType), ("offerPeriod", offerPeriod), ("renewalBillingPlanType", renewalBillingPlanType),
            ("commitmentInfo.commitmentRenewalBillingPlanType", commitmentInfo?.commitmentRenewalBillingPlanType),
        ] {
            inspection.text(name, value)
        }
        for (index, offer) in (eligibleWinBackOfferIds ?? []).enumerated() {
            inspection.identifier("eligibleWinBackOfferIds[\(index)]", offer)
        }
        for (name, value) in [
            ("gracePeriodExpiresDate", gracePeriodExpiresDate), ("signedDate", signedDate),
            ("recentSubscriptionStartDate", recentSubscriptionStartDate), ("renewalDate", renewalDate),
            ("commitmentInfo.commitmentRenewalDate", commitmentInfo?.commitmentRenewalDate),
        ] {
            inspection.date(name, value)
        }
        inspection.number("renewalPrice", renewalPrice, in: ContentLimits.prices)
        inspection.number("commitmentInfo.commitmentRenewalPrice", commitmentInfo?.commitmentRenewalPrice, in: ContentLimits.prices)
        for (name, value) in [
            ("autoRenewStatus", autoRenewStatus), ("expirationIntent", expirationIntent),
            ("priceIncreaseStatus", priceIncreaseStatus), ("offerType", offerType),
            ("commitmentInfo.commitmentAutoRenewStatus", commitmentInfo?.commitmentAutoRenewStatus),
        ] {
            inspection.number(name, value, in: ContentLimits.codes)
        }
        inspection.json("advancedCommerceInfo", advancedCommerceInfo)
        return inspection.problem
    }
}

extension VerifiedNotification {
    /// Why this notification's content — envelope or any nested payload — is outside ``ContentLimits``; `nil` when
    /// it is fine.
    public var contentProblem: String? {
        var inspection = ContentInspection()
        let payload = payload
        for (name, value) in [
            ("notificationType", payload.notificationType), ("subtype", payload.subtype),
            ("notificationUUID", payload.notificationUUID), ("version", payload.version),
            ("data.bundleId", payload.data?.bundleId), ("data.bundleVersion", payload.data?.bundleVersion),
            ("data.environment", payload.data?.environment?.rawValue),
            ("data.consumptionRequestReason", payload.data?.consumptionRequestReason),
            ("summary.bundleId", payload.summary?.bundleId), ("summary.productId", payload.summary?.productId),
            ("summary.environment", payload.summary?.environment?.rawValue),
            ("summary.requestIdentifier", payload.summary?.requestIdentifier),
            ("externalPurchaseToken.externalPurchaseId", payload.externalPurchaseToken?.externalPurchaseId),
            ("externalPurchaseToken.bundleId", payload.externalPurchaseToken?.bundleId),
            ("appData.bundleId", payload.appData?.bundleId), ("appData.environment", payload.appData?.environment?.rawValue),
        ] {
            inspection.identifier(name, value)
        }
        for (index, code) in (payload.summary?.storefrontCountryCodes ?? []).enumerated() {
            inspection.identifier("summary.storefrontCountryCodes[\(index)]", code)
        }
        inspection.date("signedDate", payload.signedDate)
        inspection.date("externalPurchaseToken.tokenCreationDate", payload.externalPurchaseToken?.tokenCreationDate)
        inspection.number("data.status", payload.data?.status, in: ContentLimits.codes)
        for (name, value) in [
            ("summary.succeededCount", payload.summary?.succeededCount), ("summary.failedCount", payload.summary?.failedCount),
        ] {
            inspection.number(name, value, in: 0...Int64(Int32.max))
        }
        if let problem = inspection.problem { return problem }
        if let problem = transaction?.contentProblem { return "transaction: \(problem)" }
        if let problem = renewalInfo?.contentProblem { return "renewal info: \(problem)" }
        if let app = appTransaction {
            var inspection = ContentInspection()
            for (name, value) in [
                ("bundleId", app.bundleId), ("applicationVersion", app.applicationVersion),
                ("originalApplicationVersion", app.originalApplicationVersion), ("appTransactionId", app.appTransactionId),
                ("originalPlatform", app.originalPlatform), ("receiptType", app.receiptType?.rawValue),
            ] {
                inspection.identifier(name, value)
            }
            inspection.text("deviceVerification", app.deviceVerification)
            inspection.text("deviceVerificationNonce", app.deviceVerificationNonce)
            for (name, value) in [
                ("receiptCreationDate", app.receiptCreationDate), ("originalPurchaseDate", app.originalPurchaseDate),
                ("preorderDate", app.preorderDate), ("signedDate", app.signedDate),
            ] {
                inspection.date(name, value)
            }
            if let problem = inspection.problem { return "app transaction: \(problem)" }
        }
        return nil
    }
}
