import Entitlements

/// Apple's `offerType`: which kind of offer a period was bought with.
public enum OfferType: Hashable, Sendable, Codable {
    case introductory
    case promotional
    case offerCode
    case winBack
    case unknown(Int32)

    public init(code: Int32) {
        switch code {
        case 1: self = .introductory
        case 2: self = .promotional
        case 3: self = .offerCode
        case 4: self = .winBack
        default: self = .unknown(code)
        }
    }

    /// Apple's number (1 introductory, 2 promotional, 3 offer code, 4 win-back), as stored and reported.
    public var code: Int32 {
        switch self {
        case .introductory: return 1
        case .promotional: return 2
        case .offerCode: return 3
        case .winBack: return 4
        case .unknown(let code): return code
        }
    }

    public init(from decoder: any Decoder) throws { self.init(code: try decoder.singleValueContainer().decode(Int32.self)) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }
}

/// Apple's `offerDiscountType`: how an offer's period is paid.
public enum OfferDiscountType: Hashable, Sendable, TextCoded {
    case freeTrial
    case payAsYouGo
    case payUpFront
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "FREE_TRIAL": self = .freeTrial
        case "PAY_AS_YOU_GO": self = .payAsYouGo
        case "PAY_UP_FRONT": self = .payUpFront
        default: self = .unknown(text)
        }
    }

    public var text: String {
        switch self {
        case .freeTrial: return "FREE_TRIAL"
        case .payAsYouGo: return "PAY_AS_YOU_GO"
        case .payUpFront: return "PAY_UP_FRONT"
        case .unknown(let text): return text
        }
    }
}
