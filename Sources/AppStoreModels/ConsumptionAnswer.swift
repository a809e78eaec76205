import Foundation

/// Whether the app delivered a purchase that works, as Send Consumption Information's `deliveryStatus` spells it.
public enum DeliveryStatus: Hashable, Sendable, CaseIterable {
    case delivered
    case undeliveredQualityIssue
    case undeliveredWrongItem
    case undeliveredServerOutage
    case undeliveredOther

    public init?(_ text: String) {
        guard let status = Self.allCases.first(where: { $0.text == text }) else { return nil }
        self = status
    }

    public var text: String {
        switch self {
        case .delivered: return "DELIVERED"
        case .undeliveredQualityIssue: return "UNDELIVERED_QUALITY_ISSUE"
        case .undeliveredWrongItem: return "UNDELIVERED_WRONG_ITEM"
        case .undeliveredServerOutage: return "UNDELIVERED_SERVER_OUTAGE"
        case .undeliveredOther: return "UNDELIVERED_OTHER"
        }
    }
}

/// The outcome the app prefers, as Send Consumption Information's `refundPreference` spells it.
public enum RefundPreference: Hashable, Sendable, CaseIterable {
    case decline
    case grantFull
    case grantProrated

    public init?(_ text: String) {
        guard let preference = Self.allCases.first(where: { $0.text == text }) else { return nil }
        self = preference
    }

    public var text: String {
        switch self {
        case .decline: return "DECLINE"
        case .grantFull: return "GRANT_FULL"
        case .grantProrated: return "GRANT_PRORATED"
        }
    }
}

/// What a refund request is about: Apple's rules for the answer differ between the two.
public enum RefundedPurchase: String, Hashable, Sendable, Codable {
    /// A consumable (a top-up): the answer may carry how much of it was consumed.
    case consumable
    /// An auto-renewable subscription: Apple computes consumption itself and refuses a percentage.
    case subscription
}

/// The body of Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`), with Apple's
/// field names. `customerConsented` is always true: without consent nothing is sent at all.
public struct ConsumptionAnswer: Codable, Hashable, Sendable {
    public var customerConsented: Bool
    /// Milliunits of a percent-of-one: 0…100 000 (100 000 is all of it). Consumables only.
    public var consumptionPercentage: Int32?
    public var deliveryStatus: String
    public var refundPreference: String?
    public var sampleContentProvided: Bool

    public init(
        consumptionPercentage: Int32?, deliveryStatus: DeliveryStatus, refundPreference: RefundPreference?, sampleContentProvided: Bool
    ) {
        self.init(
            consumptionPercentage: consumptionPercentage, deliveryStatus: deliveryStatus.text, refundPreference: refundPreference?.text,
            sampleContentProvided: sampleContentProvided)
    }

    /// An answer as the app spelled it; ``problems(for:)`` says whether Apple would take it.
    public init(consumptionPercentage: Int32?, deliveryStatus: String, refundPreference: String?, sampleContentProvided: Bool) {
        self.customerConsented = true
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }

    /// The answer in a few words: `DELIVERED · DECLINE · 62.5 %`.
    public var summary: String {
        [deliveryStatus, refundPreference, consumptionPercentage.map { "\(Double($0) / 1000) %" }].compactMap { $0 }.joined(separator: " · ")
    }

    /// Every way the answer breaks Apple's documented rules for `purchase` (Apple would refuse it with a 400); empty
    /// when it is sendable.
    public func problems(for purchase: RefundedPurchase) -> [String] {
        var problems: [String] = []
        if !customerConsented { problems.append("customerConsented must be true") }
        if DeliveryStatus(deliveryStatus) == nil {
            problems.append("deliveryStatus must be one of \(DeliveryStatus.allCases.map(\.text).joined(separator: ", "))")
        }
        if let refundPreference, RefundPreference(refundPreference) == nil {
            problems.append("refundPreference must be one of \(RefundPreference.allCases.map(\.text).joined(separator: ", "))")
        }
        if let consumptionPercentage, !(0...100_000).contains(consumptionPercentage) {
            problems.append("consumptionPercentage is in milliunits: 0 to 100000")
        }
        switch purchase {
        case .subscription:
            if consumptionPercentage != nil {
                problems.append("consumptionPercentage is not accepted for an auto-renewable subscription (Apple computes it)")
            }
        case .consumable:
            if refundPreference == RefundPreference.grantProrated.text, (consumptionPercentage ?? 0) <= 0 {
                problems.append("GRANT_PRORATED needs a consumptionPercentage above 0")
            }
        }
        return problems
    }
}
