import Entitlements
import Foundation

/// The app's own id of an account: any non-empty string of up to 128 characters and 512 UTF-8 bytes without control
/// characters (a numeric user id, a UUID, …). UUIDs are kept lowercased, so `appAccountToken`s and UUID accounts match whatever
/// their case.
public struct AccountID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let text: String

    /// The longest id accepted, in characters.
    public static let maximumLength = 128
    /// The longest id accepted, in UTF-8 bytes: one visible character can be thousands of bytes (a letter with
    /// combining marks), and an id is a key in several indexes, whose rows PostgreSQL limits to about 2.7 KB.
    public static let maximumBytes = 512
    /// What an id must be, for error messages.
    public static let rule = "1–128 characters and at most 512 UTF-8 bytes, no control characters"

    /// `nil` when `text` is empty, longer than 128 characters or holds a control character.
    public init?(_ text: String) {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maximumBytes else { return nil }
        switch text.controlCharacterScan {
        case .control: return nil
        case .ascii: guard utf8.count <= Self.maximumLength else { return nil }
        case .unicode: guard text.count <= Self.maximumLength else { return nil }
        }
        self.text = UUID.canonicalText(of: text) ?? text
    }

    public init(_ uuid: UUID) { text = uuid.lowercasedText }

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

    // Identity is by UTF-8 bytes, as PostgreSQL compares the column: Swift's `String` equality is canonical
    // equivalence, so `Åsa` composed and decomposed — two accounts to the database — were one account to the status
    // cache and to a group of spends, which let one account read and spend the other's credits.
    public static func == (lhs: AccountID, rhs: AccountID) -> Bool { lhs.text.utf8.elementsEqual(rhs.text.utf8) }

    public func hash(into hasher: inout Hasher) { text.utf8.hashBytes(into: &hasher) }

    /// Byte order, as the locks are taken in (and consistent with `==`).
    public static func < (lhs: AccountID, rhs: AccountID) -> Bool { lhs.text.utf8.lexicographicallyPrecedes(rhs.text.utf8) }
}

extension String.UTF8View {
    /// Feeds the bytes to `hasher` at once (a native string's are contiguous), byte by byte otherwise.
    public func hashBytes(into hasher: inout Hasher) {
        hasher.combine(count)
        let done: Void? = withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil { for byte in self { hasher.combine(byte) } }
    }
}
