import Crypto
import Foundation
import Testing

@testable import SignedData

/// Every reader of JWS text splits it at its two dots, found in the text's own bytes: exactly two, anywhere,
/// segments empty or not.
struct CompactSegmentsTests {
    @Test("the two dots are found where they are, and any other number of dots is no JWS")
    func dots() {
        let cases: [(String, (Int, Int)?)] = [
            ("a.b.c", (1, 3)), ("..", (0, 1)), ("a..", (1, 2)), (".b.", (0, 2)), ("hh.bbbb.ss", (2, 7)),
            ("", nil), ("abc", nil), (".", nil), ("a.b", nil), ("a.b.c.d", nil), ("...", nil), ("a.b.c.", nil),
        ]
        for (text, expected) in cases {
            var text = text
            let found = text.withUTF8 { CompactSegments.dots(in: $0) }
            #expect(found?.first == expected?.0 && found?.second == expected?.1, "\(text): \(String(describing: found))")
        }
    }

    @Test("signed parts take an empty header and refuse texts that are no compact JWS")
    func signedPartsEdges() throws {
        let body = Base64URL.encode(Data(#"{"a":1}"#.utf8))
        let signature = Base64URL.encode(Data(repeating: 7, count: 64))
        let split = try #require(SignedParts(splitting: "." + body + "." + signature, nested: []))
        #expect(split.parts[0].headerDigest == Data(SHA256.hash(data: Data())))
        #expect(split.joined(headers: split.headers) == "." + body + "." + signature)
        for text in ["", "abc", "h." + body, "h." + body + "." + signature + ".x", "h." + body + "."] {
            #expect(SignedParts(splitting: text, nested: []) == nil, "\(text)")
        }
    }
}
