/// Whether the customer bought a purchase or has it through Family Sharing (Apple's `inAppOwnershipType`).
public enum Ownership: Hashable, Sendable, TextCoded {
    case purchased
    case familyShared
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "PURCHASED": self = .purchased
        case "FAMILY_SHARED": self = .familyShared
        default: self = .unknown(text)
        }
    }

    /// Apple's word, as the API reports it (`PURCHASED`, `FAMILY_SHARED`).
    public var text: String {
        switch self {
        case .purchased: return "PURCHASED"
        case .familyShared: return "FAMILY_SHARED"
        case .unknown(let text): return text
        }
    }
}
