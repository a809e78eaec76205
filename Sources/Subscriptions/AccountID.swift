import Foundation

/// The app's own id of an account: any non-empty string of up to 128 characters without control characters (a
/// numeric user id, a UUID, …). UUIDs are kept lowercased, so `appAccountToken`s and UUID accounts match whatever
/// their case.
public struct AccountID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let text: String

    /// The longest id accepted, in characters.
    public static let maximumLength = 128

    /// `nil` when `text` is empty, longer than 128 characters or holds a control character.
    public init?(_ text: String) {
        guard !text.isEmpty, text.count <= Self.maximumLength,
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        self.text = UUID(uuidString: text).map { $0.uuidString.lowercased() } ?? text
    }

    public init(_ uuid: UUID) { text = uuid.uuidString.lowercased() }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = AccountID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an account id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    public var description: String { text }

    public static func < (lhs: AccountID, rhs: AccountID) -> Bool { lhs.text < rhs.text }
}
