import Foundation
import HostileInput
import LocalSigning
import PayloadDecoding
import Testing

/// The parser's limits, each at its edge, and the costly shapes a stranger can send. Expectations come from the
/// limits as documented (`docs/security.md`), not from the parser's code: 64 levels, 1,024 keys per object,
/// 256 KiB per string, 64 characters per number, 65,536 values and keys a document, no repeated key however it is
/// escaped.
struct ParserLimitsTests {
    func parses(_ text: String) -> Bool { (try? PayloadDecoder().decode(JSONValue.self, from: Data(text.utf8))) != nil }

    func object(keys: Int, key: (Int) -> String = { "k\($0)" }) -> String {
        "{" + (0..<keys).map { "\"\(key($0))\":\($0)" }.joined(separator: ",") + "}"
    }

    @Test func keysPerObject() {
        #expect(parses(object(keys: 1_024)))
        #expect(!parses(object(keys: 1_025)))
        // Arrays are not objects: many elements are fine, up to the document's limit.
        #expect(parses("[" + Array(repeating: "0", count: 60_000).joined(separator: ",") + "]"))
    }

    /// 65,536 values and keys in all, the array or object that holds them counted (1 MiB of tape): a 512-KiB body of
    /// `[0,0,…]` made four times as many.
    @Test func valuesPerDocument() {
        #expect(parses("[" + Array(repeating: "0", count: 65_535).joined(separator: ",") + "]"))
        #expect(!parses("[" + Array(repeating: "0", count: 65_536).joined(separator: ",") + "]"))
        // Keys count: 64 objects of 511 members and an outer array are 64 × (1 + 2 × 511) + 1 = 65,473 tokens.
        let objects = (0..<64).map { _ in object(keys: 511) }
        #expect(parses("[" + objects.joined(separator: ",") + "]"))
        #expect(!parses("[" + (objects + [object(keys: 40)]).joined(separator: ",") + "]"))
    }

    @Test(arguments: [9, 100, 1_024])
    func repeatedKeysAreFoundInObjectsOfAnySize(keys: Int) {
        // The repeat is the last key, written with an escape: only its unescaped text shows it.
        let members = (0..<(keys - 1)).map { "\"k\($0)\":\($0)" } + [#""\u006b0":-1"#]
        #expect(!parses("{" + members.joined(separator: ",") + "}"))
        #expect(parses(object(keys: keys)))
        // Escaped but distinct keys are fine, and each is read as its unescaped text.
        let escaped = try? PayloadDecoder().decode(JSONValue.self, from: Data(object(keys: keys) { #"\u006b\#($0)"# }.utf8))
        #expect(escaped == (try? PayloadDecoder().decode(JSONValue.self, from: Data(object(keys: keys).utf8))))
    }

    @Test func stringLength() {
        #expect(parses("\"" + String(repeating: "x", count: 256 * 1024) + "\""))
        #expect(!parses("\"" + String(repeating: "x", count: 256 * 1024 + 1) + "\""))
    }

    @Test func numberLength() {
        #expect(parses(String(repeating: "9", count: 64)))
        #expect(!parses(String(repeating: "9", count: 65)))
        #expect(!parses("0." + String(repeating: "1", count: 63)))
    }

    @Test func jsonValueIsBuiltFromTokenKinds() throws {
        let text = #"{"a":[null,true,false,1.5,"s",{"b":[]}],"\u0063":{}}"#
        let value = try PayloadDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(
            value
                == .object([
                    "a": .array([.null, .bool(true), .bool(false), .number(1.5), .string("s"), .object(["b": .array([])])]),
                    "c": .object([:]),
                ]))
        #expect(value == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))))
    }

    /// Every costly shape at 512 KiB: decoded or refused with a `DecodingError` — never a crash or a hang (the
    /// suite's time limit would catch one; `storekeeper-bench hostile` measures the cost).
    @Test func costlyShapesAreParsedOrRefused() async {
        let shapes = HostileShapes.all(size: 512 * 1024)
        #expect(shapes.count >= 10)
        for shape in shapes {
            // Parsing half a megabyte takes a while in a debug build: let the suite's other tests have the threads.
            await Task.yield()
            #expect(shape.bytes.count <= 512 * 1024, "\(shape.name)")
            do {
                _ = try PayloadDecoder().decode(JSONValue.self, from: shape.bytes)
            } catch is DecodingError {
            } catch {
                Issue.record("\(shape.name): \(error)")
            }
        }
    }
}
