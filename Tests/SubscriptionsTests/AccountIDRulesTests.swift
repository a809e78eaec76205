import Foundation
import Subscriptions
import Testing

@Suite("Account ids: which texts are ids, and how UUIDs are kept")
struct AccountIDRulesTests {
    /// The rule as `AccountID` documents it, spelled out on characters and Unicode properties; a UUID is RFC 9562's
    /// text form (8-4-4-4-12 hexadecimal digits), kept in lowercase.
    static func documented(_ text: String) -> String? {
        guard !text.isEmpty, text.count <= AccountID.maximumLength,
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        let uuid = text.wholeMatch(of: /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/) != nil
        return uuid ? text.lowercased() : text
    }

    @Test("the byte-wise check of ASCII ids decides as the documented rule does, over 20,000 random texts")
    func agreesWithTheDocumentedRule() {
        var generator = SystemRandomNumberGenerator()
        let pieces: [String] = [
            "a", "Z", "7", "-", "_", " ", ".", "\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}", "\u{A0}", "é", "e\u{301}", "ß", "€",
            "👍🏽", "\u{200B}", "\t", "\n",
        ]
        var decided = (accepted: 0, refused: 0)
        for _ in 0..<20_000 {
            let text: String
            switch Int.random(in: 0..<5, using: &generator) {
            case 0:
                let uuid = UUID().uuidString
                text = Bool.random(using: &generator) ? uuid : uuid.lowercased()
            case 4:
                // A UUID with one character replaced: most are no longer one.
                var characters = Array(UUID().uuidString)
                characters[Int.random(in: 0..<36, using: &generator)] = (pieces + ["+", "g", "f", "0"]).randomElement(using: &generator)!.first!
                text = String(characters)
            case 1:
                // Around the length limit, ASCII and not.
                let length = Int.random(in: 120...132, using: &generator)
                text = String((0..<length).map { _ in Bool.random(using: &generator) ? "x" : (pieces.randomElement(using: &generator)!.first!) })
            default:
                text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            }
            let id = AccountID(text)
            #expect(id?.text == Self.documented(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            if id == nil { decided.refused += 1 } else { decided.accepted += 1 }
        }
        #expect(decided.accepted > 2_000 && decided.refused > 2_000)
    }

    @Test("limits at their edges")
    func edges() {
        #expect(AccountID(String(repeating: "a", count: 128))?.text.count == 128)
        #expect(AccountID(String(repeating: "a", count: 129)) == nil)
        #expect(AccountID(String(repeating: "é", count: 128)) != nil)
        #expect(AccountID(String(repeating: "e\u{301}", count: 128)) != nil, "128 characters, 256 scalars")
        #expect(AccountID(String(repeating: "é", count: 129)) == nil)
        #expect(AccountID("") == nil)
        #expect(AccountID("user\u{7F}") == nil)
        #expect(AccountID("user\u{85}") == nil)
        #expect(AccountID("A4B5C6D7-0000-4000-8000-0000000000AB")?.text == "a4b5c6d7-0000-4000-8000-0000000000ab")
        #expect(AccountID("A4B5C6D7-0000-4000-8000-0000000000AB-")?.text == "A4B5C6D7-0000-4000-8000-0000000000AB-")
        // Not a UUID, though Foundation's sscanf has read it as one (…-45FB-…): kept as it is, its own account.
        #expect(AccountID("BF7DDA0C-47B6-45-5-BD25-AAB37D22B91A")?.text == "BF7DDA0C-47B6-45-5-BD25-AAB37D22B91A")
    }
}
