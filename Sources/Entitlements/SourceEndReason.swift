/// Why a source ended, in every store's words: ran out (with the store's reason, Apple's `EXPIRED_<subtype>`), taken
/// back by a refund, revoked (Family Sharing), or ended by an operator.
public enum SourceEndReason: Hashable, Sendable, TextCoded {
    /// `EXPIRED_<why>`: Apple's expiry subtype (the customer turned renewal off, billing failed, a price increase was
    /// declined, the product left the store, or Apple did not say).
    case expired(String)
    case refund
    case revoke
    case endedByOperator
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "REFUND": self = .refund
        case "REVOKE": self = .revoke
        case "ENDED_BY_OPERATOR": self = .endedByOperator
        case let text where text.hasPrefix("EXPIRED_"): self = .expired(String(text.dropFirst("EXPIRED_".count)))
        default: self = .unknown(text)
        }
    }

    /// As stored and reported: `REFUND`, `REVOKE`, `ENDED_BY_OPERATOR`, `EXPIRED_<why>`.
    public var text: String {
        switch self {
        case .expired(let why): return "EXPIRED_\(why)"
        case .refund: return "REFUND"
        case .revoke: return "REVOKE"
        case .endedByOperator: return "ENDED_BY_OPERATOR"
        case .unknown(let text): return text
        }
    }

    /// Whether access ended because the purchase was taken back (its credits go too).
    public var removesCredits: Bool { self == .refund || self == .revoke }
}
