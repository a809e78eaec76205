import AppStoreModels
import Foundation
import TestSupport
import Testing

@testable import SignedData

/// Signed payloads kept as parts must join back to exactly the text Apple sent — checked here on Apple's own samples
/// by comparing bytes and verifying the joined text again, not by trusting the encoder.
@Suite("Signed payloads as parts", .enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
struct SignedPartsTests {
    /// The nested JWS of sample 46 are samples 47 and 48 (per the fixtures' README), found in it independently.
    @Test("Apple's notification 46 with its nested transaction and renewal joins back byte for byte and verifies")
    func realNotification() async throws {
        let text = try Self.sample(46)
        let nested = [("signedTransactionInfo", try Self.sample(47)), ("signedRenewalInfo", try Self.sample(48))]
        let body = String(decoding: try #require(Base64URL.decode(text.split(separator: ".")[1])), as: UTF8.self)
        let nestedInBody = nested.map { body.contains("\"\($0.0)\":\"" + $0.1 + "\"") }
        #expect(nestedInBody == [true, true])
        let split = try #require(SignedParts(splitting: text, nested: nested))
        #expect(split.parts.count == 3)
        // Distinct headers, counted from the texts themselves.
        let distinctHeaders = Set(([text] + nested.map(\.1)).map { $0.split(separator: ".")[0] })
        #expect(split.headers.count == distinctHeaders.count)
        #expect(Set(split.headers.values.map { Substring($0) }) == distinctHeaders)

        let decoded = try #require(SignedParts(encoded: split.encoded))
        let joined = try #require(decoded.joined(headers: split.headers))
        #expect(Array(joined.utf8) == Array(text.utf8))
        let verifier = RealAppleSamples.verifier(bundleId: "com.tuyoo.testing", roots: [try RealAppleSamples.appleRoot()])
        let notification = try await verifier.verifyNotification(joined)
        #expect(notification.transaction?.transactionId == "2000000310357357")
        // Each nested payload is found by its field, as signed.
        #expect(decoded.body(ofNested: "signedTransactionInfo") == Base64URL.decode(nested[0].1.split(separator: ".")[1]))
        #expect(decoded.body(ofNested: "signedRenewalInfo") == Base64URL.decode(nested[1].1.split(separator: ".")[1]))
        // Given in the other order, the parts keep it and still join back.
        let reversed = try #require(SignedParts(splitting: text, nested: nested.reversed()))
        #expect(SignedParts(encoded: reversed.encoded)?.joined(headers: reversed.headers) == text)
        // What a notification costs once its header is stored: its parts, against the bytes Apple sent.
        #expect(split.encoded.count * 4 < text.utf8.count, "\(split.encoded.count) of \(text.utf8.count) bytes")
    }

    @Test("every real sample on its own joins back byte for byte", arguments: RealAppleSamples.all.map(\.number))
    func everySample(number: Int) throws {
        let text = try Self.sample(number)
        let split = try #require(SignedParts(splitting: text, nested: []))
        let joined = SignedParts(encoded: split.encoded)?.joined(headers: split.headers)
        #expect(joined.map { Array($0.utf8) } == Array(text.utf8))
    }

    @Test("payloads whose parts would not join back exactly are refused, so the caller keeps them verbatim")
    func refusals() throws {
        let text = try Self.sample(46)
        let segments = text.split(separator: ".").map(String.init)
        // Padding is tolerated by the decoder but would be lost.
        #expect(SignedParts(splitting: segments[0] + "." + segments[1] + "." + segments[2] + "==", nested: []) == nil)
        // A nested text that is not in the body.
        #expect(SignedParts(splitting: text, nested: [("signedTransactionInfo", try Self.sample(50))]) == nil)
        // Not a compact JWS; a signature that is not 64 bytes.
        #expect(SignedParts(splitting: "a.b", nested: []) == nil)
        #expect(SignedParts(splitting: segments[0] + "." + segments[1] + ".AAAA", nested: []) == nil)
        // The same nested text twice cannot be two parts.
        let inner = try Self.sample(47)
        #expect(SignedParts(splitting: text, nested: [("a", inner), ("b", inner)]) == nil)
    }

    @Test("truncated or altered encodings are refused without a crash")
    func damagedEncodings() throws {
        let text = try Self.sample(46)
        let encoded = try #require(
            SignedParts(splitting: text, nested: [("signedTransactionInfo", try Self.sample(47)), ("signedRenewalInfo", try Self.sample(48))])
        ).encoded
        for length in 0..<encoded.count { #expect(SignedParts(encoded: encoded.prefix(length)) == nil) }
        var version = encoded
        version[0] = 2
        #expect(SignedParts(encoded: version) == nil)
        var longer = encoded
        longer.append(0)
        #expect(SignedParts(encoded: longer) == nil)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = Data((0..<Int.random(in: 0..<400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            _ = SignedParts(encoded: Data([1, UInt8.random(in: 0...4, using: &random)]) + bytes)
        }
        // A header not supplied cannot be joined.
        #expect(SignedParts(encoded: encoded)?.joined(headers: [:]) == nil)
    }

    static func sample(_ number: Int) throws -> String {
        try #require(RealAppleSamples.all.first { $0.number == number }).text
    }
}
