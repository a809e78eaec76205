/// Where an entitlement comes from: a store that sells it, or the operator who granted it.
public enum Store: Hashable, Sendable, TextCoded {
    case appStore
    case stripe
    /// Google Play (Android).
    case googlePlay
    /// An operator's grant (`POST /admin/accounts/{id}/grants`): no store sold it.
    case operatorGrant
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "app_store": self = .appStore
        case "stripe": self = .stripe
        case "google_play": self = .googlePlay
        case "operator": self = .operatorGrant
        default: self = .unknown(text)
        }
    }

    /// The name clients read (`app_store`, `stripe`, `google_play`, `operator`).
    public var text: String {
        switch self {
        case .appStore: return "app_store"
        case .stripe: return "stripe"
        case .googlePlay: return "google_play"
        case .operatorGrant: return "operator"
        case .unknown(let text): return text
        }
    }
}
