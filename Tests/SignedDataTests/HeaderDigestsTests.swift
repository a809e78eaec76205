import Crypto
import Foundation
import Testing

@testable import SignedData

/// A header's digest is its parts' storage key: a remembered one must be the SHA-256 of exactly that header, however
/// alike two headers look to the cache's cheap hash.
struct HeaderDigestsTests {
    @Test("headers alike in length and in their last 32 bytes keep their own digests, found again or not")
    func lookAlikeHeaders() throws {
        let tail = String(repeating: "x", count: 40)
        let headers = ["A" + tail, "B" + tail, "A" + tail]
        for header in headers {
            let split = try #require(SignedParts(splitting: Self.jws(header: header), nested: []))
            let digest = Data(SHA256.hash(data: Array(header.utf8)))
            #expect(split.parts[0].headerDigest == digest)
            #expect(split.headers == [digest: header])
        }
    }

    @Test("more distinct headers than the cache keeps: each split still carries its own header's digest")
    func manyHeaders() throws {
        let cache = HeaderDigests(capacity: 4)
        for round in 0..<3 {
            for index in 0..<10 {
                let header = Array("header-\(index)-\(String(repeating: "y", count: 64))".utf8)
                let found = header.withUnsafeBufferPointer { cache.digest(of: $0) }
                #expect(found.digest == Data(SHA256.hash(data: header)), "round \(round), header \(index)")
                #expect(found.text == String(decoding: header, as: UTF8.self))
            }
        }
    }

    /// A compact JWS of `header` (taken as is), a small body and a 64-byte signature.
    static func jws(header: String) -> String {
        header + "." + Base64URL.encode(Data(#"{"a":1}"#.utf8)) + "." + Base64URL.encode(Data(repeating: 7, count: 64))
    }
}
