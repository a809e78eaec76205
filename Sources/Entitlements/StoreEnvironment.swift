/// The environment of a purchase, in any store: its production, or one of its test environments. Spelled as Apple
/// spells it (`Production`, `Sandbox`, `Xcode`, `LocalTesting`) wherever Storekeeper writes it — facts, events,
/// entitlement sources; Stripe's test mode and Google Play's test purchases are `Sandbox`. Analytics files purchases
/// under two lower-case keys instead (``Rollup``).
///
/// Apple adds values without notice, so the raw string is kept and unknown values compare unequal to every known one.
public struct StoreEnvironment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = StoreEnvironment(rawValue: "Production")
    public static let sandbox = StoreEnvironment(rawValue: "Sandbox")
    public static let xcode = StoreEnvironment(rawValue: "Xcode")
    public static let localTesting = StoreEnvironment(rawValue: "LocalTesting")
    /// What Storekeeper records when a payload names no environment (2021-era transactions).
    public static let unknown = StoreEnvironment(rawValue: "unknown")

    public var description: String { rawValue }

    /// The analytics rollups' key (`production` or `sandbox`): every test environment is `sandbox`.
    public enum Rollup: String, Sendable, Hashable, CaseIterable, Codable {
        case production, sandbox
    }

    /// The key analytics files a purchase of this environment under.
    public var rollup: Rollup { self == .production ? .production : .sandbox }

    /// The environment a Stripe object's `livemode` names.
    public init(livemode: Bool) { self = livemode ? .production : .sandbox }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
