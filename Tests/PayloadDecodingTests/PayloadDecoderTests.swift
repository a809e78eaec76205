import AppStoreModels
import Foundation
import PayloadDecoding
import TestSupport
import Testing

/// `PayloadDecoder` must agree with Foundation's `JSONDecoder` — same values, or both refusing — on every input, except
/// that it holds to RFC 8259 where Foundation is lenient (strings it does not read, trailing commas) and refuses
/// repeated keys.
struct PayloadDecoderTests {
    struct Sample: Codable, Equatable {
        var id: String
        var count: Int32?
        var amount: Int64?
        var ratio: Double?
        var flag: Bool?
        var tags: [String]?
        var nested: Nested?
        var environment: AppStoreEnvironment?

        struct Nested: Codable, Equatable {
            var name: String?
            var values: [Int]?
        }
    }

    @Test func decodesEveryShapeTheModelsUse() throws {
        let json = #"""
            { "id": "a\"b\\c\/d\u00e9\ud83d\ude00\n", "count": -2147483648, "amount": 9223372036854775807,
              "ratio": 1.5e-3, "flag": false, "tags": ["x", "", "ü"], "nested": {"name": null, "values": [1, -0, 3]},
              "environment": "Sandbox", "unknown": {"deep": [[[]]], "n": 1e300} }
            """#
        let sample = try PayloadDecoder().decode(Sample.self, from: Data(json.utf8))
        #expect(sample.id == "a\"b\\c/dé😀\n")
        #expect(sample.count == Int32.min)
        #expect(sample.amount == Int64.max)
        #expect(sample.ratio == 0.0015)
        #expect(sample.flag == false)
        #expect(sample.tags == ["x", "", "ü"])
        #expect(sample.nested == Sample.Nested(name: nil, values: [1, 0, 3]))
        #expect(sample.environment == .sandbox)
        try expectAgreement(json)
    }

    @Test(arguments: [#"{"id":"first","id":"last"}"#, #"{"id":"x","nested":{"a":1,"b":2,"\u0061":3}}"#])
    func refusesARepeatedKey(json: String) throws {
        #expect(throws: DecodingError.self) { try PayloadDecoder().decode(JSONValue.self, from: Data(json.utf8)) }
        // Foundation accepts it and picks the first value, where Apple's Python, Java and Node libraries pick the last.
        #expect(throws: Never.self) { try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)) }
    }

    @Test(arguments: [
        "", " ", "{", "}", "[]", "{\"id\":}", "{\"id\":\"x\"} x", "{\"id\":\"x\"}}", "{id:\"x\"}",
        "{\"id\":'x'}", "{\"id\":\"x\",\"count\":01}", "{\"id\":\"x\",\"count\":-}", "{\"id\":\"x\",\"count\":1.}",
        "{\"id\":\"x\",\"count\":.5}", "{\"id\":\"x\",\"count\":1e}", "{\"id\":\"x\",\"count\":+1}",
        "{\"id\":\"\\x\"}", "{\"id\":\"\\u12\"}", "{\"id\":\"\\ud800\"}", "{\"id\":\"\\udc00x\"}", "{\"id\":\"tab\there\"}",
        "{\"id\":\"x\",\"count\":2147483648}", "{\"id\":\"x\",\"count\":1.5}", "{\"id\":\"x\",\"count\":\"1\"}",
        "{\"id\":\"x\",\"flag\":1}", "{\"id\":\"x\",\"flag\":tru}", "{\"id\":null}", "{\"count\":1}", "{\"id\":\"x\",\"tags\":[1]}",
        "{\"id\":\"x\",\"nested\":[]}", "{\"id\":\"x\",\"amount\":1e3}", "{\"id\":\"x\",\"amount\":-0.0}", "[\"id\"]",
        "{\"id\":\"x\",\"ratio\":1e400}", "\u{FEFF}{\"id\":\"x\"}", "{\"id\":\"x\"}\n\t\r ",
    ])
    func agreesWithFoundationOnEdgeCases(json: String) throws {
        try expectAgreement(json)
    }

    @Test(arguments: [
        Array(#"{"id":"x","other":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
        Array(#"{"id":"x","other":"\5"}"#.utf8),
        Array(#"{"id":"x","other":"\ud800"}"#.utf8),
        Array(#"{"id":"x","other":"a"#.utf8) + [0x01] + Array(#""}"#.utf8),
    ])
    func refusesBrokenStringsEvenWhereItDoesNotRead(bytes: [UInt8]) throws {
        #expect(throws: DecodingError.self) { try PayloadDecoder().decode(Sample.self, from: bytes) }
        #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: Data(bytes)) }
        // Foundation's decoder does not look at strings it does not read.
        #expect(throws: Never.self) { try JSONDecoder().decode(Sample.self, from: Data(bytes)) }
    }

    /// Foundation (decoder and serialization) accepts trailing commas; RFC 8259 and Apple's other libraries do not.
    @Test(arguments: [#"{"id":"x",}"#, #"{"id":"x","tags":["a",]}"#])
    func refusesTrailingCommas(json: String) throws {
        #expect(throws: DecodingError.self) { try PayloadDecoder().decode(Sample.self, from: Data(json.utf8)) }
        #expect(throws: Never.self) { try JSONDecoder().decode(Sample.self, from: Data(json.utf8)) }
    }

    @Test func refusesNestingDeeperThan64() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: DecodingError.self) { try PayloadDecoder().decode([JSONValue].self, from: Data(deep.utf8)) }
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: DecodingError.self) { try PayloadDecoder().decode(JSONValue.self, from: Data(tooDeep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try PayloadDecoder().decode(JSONValue.self, from: Data(fine.utf8))
    }

    @Test func errorsCarryTheCodingPath() throws {
        let json = #"{"id":"x","nested":{"values":[1,"two"]}}"#
        do {
            _ = try PayloadDecoder().decode(Sample.self, from: Data(json.utf8))
            Issue.record("decoded a string as an Int")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["nested", "values", "Index 1"])
        }
        do {
            _ = try PayloadDecoder().decode(Sample.self, from: Data(#"{"nested":{}}"#.utf8))
            Issue.record("decoded without the required id")
        } catch DecodingError.keyNotFound(let key, let context) {
            #expect(key.stringValue == "id")
            #expect(context.codingPath.isEmpty)
        }
    }

    /// The real Apple payloads (envelopes, transactions, renewal infos) decode to the same models either way.
    @Test(.enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
    func decodesEveryRealApplePayloadAsFoundationDoes() throws {
        let payloads = try RealApplePayloads.all()
        #expect(payloads.count >= 20)
        for payload in payloads {
            try expectAgreement(payload, as: NotificationPayload.self)
            try expectAgreement(payload, as: TransactionPayload.self)
            try expectAgreement(payload, as: RenewalInfoPayload.self)
            try expectAgreement(payload, as: JSONValue.self)
        }
    }

    /// Thousands of random mutations of real payloads: never a crash, and always Foundation's verdict and values.
    @Test(.enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
    func randomMutationsOfRealPayloadsAgreeWithFoundation() throws {
        let payloads = try RealApplePayloads.all()
        var random = SplitMix64(state: 0x5EED_0F_DEC0DE)
        let alphabet = Array(#"{}[]":,\-.0123456789eE+tfnul aA"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF]
        var decoded = 0
        for round in 0..<6_000 {
            var bytes = payloads[round % payloads.count]
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<max(bytes.count, 1), using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0 where !bytes.isEmpty: bytes[position] = alphabet.randomElement(using: &random)!
                case 1 where !bytes.isEmpty: bytes.remove(at: position)
                case 2: bytes.insert(alphabet.randomElement(using: &random)!, at: min(position, bytes.count))
                default: bytes = Array(bytes.prefix(position))
                }
            }
            try expectAgreement(bytes, as: TransactionPayload.self, context: "round \(round)")
            try expectAgreement(bytes, as: NotificationPayload.self, context: "round \(round)")
            if (try? PayloadDecoder().decode(TransactionPayload.self, from: bytes)) != nil { decoded += 1 }
        }
        // Both verdicts are exercised: many mutants still decode (changed values, unknown keys), most do not.
        #expect(decoded > 300 && decoded < 5_000, "\(decoded) of 6000 mutants decoded")
    }

    private func expectAgreement(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectAgreement(Array(json.utf8), as: Sample.self, sourceLocation: sourceLocation)
        try expectAgreement(Array(json.utf8), as: JSONValue.self, sourceLocation: sourceLocation)
    }

    private func expectAgreement<Value: Decodable & Equatable>(
        _ bytes: [UInt8], as type: Value.Type, context: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let foundation = Result { try JSONDecoder().decode(type, from: Data(bytes)) }
        let ours = Result { try PayloadDecoder().decode(type, from: bytes) }
        let text = String(decoding: bytes, as: UTF8.self)
        switch (foundation, ours) {
        case (.success(let expected), .success(let actual)):
            #expect(actual == expected, "\(context) \(text)", sourceLocation: sourceLocation)
        case (.failure, .failure(let error)):
            #expect(error is DecodingError, sourceLocation: sourceLocation)
        case (.success, .failure) where (try? JSONSerialization.jsonObject(with: Data(bytes))) == nil:
            break  // not JSON: a string `JSONDecoder` did not read is broken
        case (.success, .failure) where text.contains(/,\s*[}\]]/):
            break  // a trailing comma, which Foundation tolerates
        case (.success, .failure(let error)):
            Issue.record("\(context) refused what Foundation decodes (\(error)): \(text)", sourceLocation: sourceLocation)
        case (.failure(let error), .success):
            Issue.record("\(context) decoded what Foundation refuses (\(error)): \(text)", sourceLocation: sourceLocation)
        }
    }
}

/// The JSON payloads of the real Apple samples in `../shared/fixtures/apple-real/` and of the JWS nested in them.
enum RealApplePayloads {
    static let directory = AppleSamples.directory

    static func all() throws -> [[UInt8]] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".jws") }.sorted()
        var payloads: [[UInt8]] = []
        for file in files {
            let jws = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let payload = try self.payload(of: jws)
            payloads.append(payload)
            let envelope = try? JSONDecoder().decode(NotificationPayload.self, from: Data(payload))
            for nested in [envelope?.data?.signedTransactionInfo, envelope?.data?.signedRenewalInfo].compactMap({ $0 }) {
                payloads.append(try self.payload(of: nested))
            }
        }
        return payloads
    }

    private static func payload(of jws: String) throws -> [UInt8] {
        var segment = jws.split(separator: ".")[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        segment += String(repeating: "=", count: (4 - segment.count % 4) % 4)
        return try #require(Data(base64Encoded: segment).map(Array.init))
    }
}
