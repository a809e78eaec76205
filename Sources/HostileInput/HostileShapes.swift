import Foundation

/// JSON documents shaped to cost a parser as much as a given size allows: many keys, escaped keys, deep nesting,
/// long strings and numbers — each limit approached from below and passed. `storekeeper-bench hostile` and
/// `storekeeper-bench drill hostile` send them as request bodies and as the payload of a signed JWS; the tests parse them.
public enum HostileShapes {
    /// One document.
    public struct Shape: Sendable {
        public let name: String
        public let bytes: [UInt8]

        public init(name: String, bytes: [UInt8]) {
            self.name = name
            self.bytes = bytes
        }
    }

    /// Every shape, each about `size` bytes.
    public static func all(size: Int) -> [Shape] {
        [
            Shape(name: "distinct keys in one object", bytes: object(size: size) { "\"k\($0)\":0" }),
            Shape(name: "objects of 1,024 distinct keys", bytes: objects(size: size, keys: 1_024) { "\"k\($0)\":0" }),
            Shape(name: "objects of 1,024 escaped keys", bytes: objects(size: size, keys: 1_024) { #""\u006b\#($0)":0"# }),
            Shape(
                name: "objects of 1,024 keys alike at both ends",
                bytes: objects(size: size, keys: 1_024) { "\"a" + String(format: "%06d", $0) + "a\":0" }),
            Shape(name: "a repeated key after 1,000 others", bytes: repeatedKey(size: size)),
            Shape(
                name: "nesting 64 deep, repeated",
                bytes: array(size: size) { _ in String(repeating: "[", count: 63) + String(repeating: "]", count: 63) }),
            Shape(name: "nesting past the limit", bytes: Array(String(repeating: "[{\"a\":", count: size / 6).utf8)),
            Shape(name: "one long string", bytes: Array(("\"" + String(repeating: "x", count: size - 2) + "\"").utf8)),
            Shape(name: "strings of escapes", bytes: array(size: size) { _ in "\"" + String(repeating: #"\u00e9"#, count: 100) + "\"" }),
            Shape(name: "64-digit numbers", bytes: array(size: size) { _ in String(repeating: "9", count: 64) }),
            Shape(name: "numbers past their range", bytes: array(size: size) { _ in "1e999999" }),
            Shape(name: "tiny values", bytes: array(size: size) { _ in "0" }),
            Shape(name: "empty containers", bytes: array(size: size) { $0 % 2 == 0 ? "[]" : "{}" }),
        ]
    }

    /// `{"<key 0>":…, "<key 1>":…, …}` up to `size` bytes.
    static func object(size: Int, member: (Int) -> String) -> [UInt8] {
        var text = "{"
        var index = 0
        while text.utf8.count < size - 32 {
            text += (index == 0 ? "" : ",") + member(index)
            index += 1
        }
        return Array((text + "}").utf8)
    }

    /// An array of objects of `keys` members each, up to `size` bytes.
    static func objects(size: Int, keys: Int, member: (Int) -> String) -> [UInt8] {
        let one = "{" + (0..<keys).map(member).joined(separator: ",") + "}"
        return array(size: size) { _ in one }
    }

    /// An array of `element`s up to `size` bytes.
    static func array(size: Int, element: (Int) -> String) -> [UInt8] {
        var text = "["
        var index = 0
        while true {
            let next = element(index)
            guard text.utf8.count + next.utf8.count + 2 < size else { break }
            text += (index == 0 ? "" : ",") + next
            index += 1
        }
        return Array((text + "]").utf8)
    }

    /// Objects of 1,001 keys whose last repeats the first, escaped.
    static func repeatedKey(size: Int) -> [UInt8] {
        objects(size: size, keys: 1_001) { $0 == 1_000 ? #""\u006b0":1"# : "\"k\($0)\":0" }
    }
}
