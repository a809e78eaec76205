import Entitlements
import Foundation
import Testing

/// The hand-written id text (`UUID+Text.swift`) against Foundation's, which it replaces on the hot paths: the same
/// text out, the same texts accepted, the same ids read.
@Suite("Ids as text: written and read as Foundation does")
struct UUIDTextTests {
    @Test("an id's text is Foundation's, lowercased or as it is, and reads back to the id in any case")
    func roundTrip() {
        for _ in 0..<20_000 {
            let id = UUID.systemRandom()
            let text = id.lowercasedText
            #expect(text == id.uuidString.lowercased())
            #expect(id.uppercasedText == id.uuidString)
            #expect(UUID(text: text) == id && UUID(text: id.uuidString) == id)
            #expect(UUID.canonicalText(of: id.uuidString) == text && UUID.canonicalText(of: text) == text)
        }
        let edges = [
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
        ]
        #expect(edges.map(\.lowercasedText) == ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
        #expect(edges.map(\.uppercasedText) == ["00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"])
    }

    /// RFC 9562's text form: 8-4-4-4-12 hexadecimal digits, in either case.
    static func inForm(_ text: String) -> Bool {
        text.wholeMatch(of: /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/) != nil
    }

    @Test(
        "a text not in the form — a byte changed, one more or fewer, a hyphen moved, a letter beyond f, non-ASCII — is refused; one in it reads as Foundation reads it"
    )
    func refusals() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefABCDEFgG-+xZ {}/:@`\0é日".unicodeScalars)
        var refused = 0
        for round in 0..<20_000 {
            var scalars = Array(UUID.systemRandom().uuidString.unicodeScalars)
            if round % 7 == 0 { scalars = scalars.map { Bool.random(using: &generator) ? Unicode.Scalar(UInt8(ascii: "a")) : $0 } }
            switch round % 4 {
            case 0: scalars[Int.random(in: 0..<scalars.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            case 1: scalars.insert(alphabet.randomElement(using: &generator)!, at: Int.random(in: 0...scalars.count, using: &generator))
            case 2: scalars.remove(at: Int.random(in: 0..<scalars.count, using: &generator))
            default: scalars.swapAt(8, Int.random(in: 0..<scalars.count, using: &generator))
            }
            let text = String(String.UnicodeScalarView(scalars))
            let expected = Self.inForm(text) ? UUID(uuidString: text) : nil
            #expect(UUID(text: text) == expected, "\(text.debugDescription)")
            #expect(UUID(text: Substring(text)) == expected, "\(text.debugDescription)")
            #expect(UUID.canonicalText(of: text) == expected.map { $0.uuidString.lowercased() }, "\(text.debugDescription)")
            if expected == nil { refused += 1 }
        }
        // Most changes break the form; some (a digit for a digit) keep it: both kinds were met.
        #expect(refused > 10_000 && refused < 20_000)
        for text in ["", "-", String(repeating: "-", count: 36), "00000000-0000-0000-0000-00000000000g", "00000000_0000_0000_0000_000000000000"] {
            #expect(UUID(text: text) == nil && UUID.canonicalText(of: text) == nil && UUID(uuidString: text) == nil, "\(text)")
        }
    }

    @Test("a sign or a space inside a pair of digits is refused (Foundation's sscanf on Linux has read 45-5 as 45fb)")
    func signsAndSpacesRefused() {
        for text in ["BF7DDA0C-47B6-45-5-BD25-AAB37D22B91A", "DA83B 6B-3D3C-4A5F-8BE2-3B4664B4548F", "+a83b06b-3d3c-4a5f-8be2-3b4664b4548f"] {
            #expect(UUID(text: text) == nil && UUID.canonicalText(of: text) == nil, "\(text)")
        }
    }
}
