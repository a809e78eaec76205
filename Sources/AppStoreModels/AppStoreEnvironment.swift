/// The App Store environment a payload was signed for (`Sandbox`, `Production`, `Xcode`, `LocalTesting`).
///
/// Apple adds values without notice, so the raw string is kept and unknown values compare unequal to every known one.
public struct AppStoreEnvironment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = AppStoreEnvironment(rawValue: "Production")
    public static let sandbox = AppStoreEnvironment(rawValue: "Sandbox")
    public static let xcode = AppStoreEnvironment(rawValue: "Xcode")
    public static let localTesting = AppStoreEnvironment(rawValue: "LocalTesting")
    /// What Storekeeper records when a payload names no environment (2021-era transactions).
    public static let unknown = AppStoreEnvironment(rawValue: "unknown")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
