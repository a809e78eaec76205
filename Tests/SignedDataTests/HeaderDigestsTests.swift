import Crypto
import Foundation
import Testing

@testable import SignedData

/// A header's digest is its parts' storage key: a remembered one must be the SHA-256 of exactly that header, however
/// alike two headers look to the cache's cheap hash.
struct HeaderDigestsTests {
    /// 41 bytes: the key hashes bytes 9–40 of a header so short, the same `x` in all three.
    @Test("headers alike in length and in the bytes the key hashes keep their own digests, found again or not")
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

    @Test("more distinct headers than the cache keeps: each lookup still gives its own header's digest, and no more are kept")
    func manyHeaders() throws {
        let cache = HeaderDigests(capacity: 4)
        Self.lookUp(headers: 0..<10, rounds: 3, in: cache)
        // Ten headers cycling through four places: each is forgotten before it comes back.
        #expect(cache.counts.hashed == 30)
    }

    @Test("headers that repeat are hashed once each")
    func repeatedHeaders() throws {
        let cache = HeaderDigests(capacity: 4)
        Self.lookUp(headers: 0..<3, rounds: 5, in: cache)
        #expect(cache.counts.kept == 3)
        #expect(cache.counts.hashed == 3)
    }

    /// Looks up ``header(_:)`` of each of `headers`, `rounds` times over: each answer is its own header's text and
    /// SHA-256, and the cache never keeps more than its capacity of 4.
    static func lookUp(headers: Range<Int>, rounds: Int, in cache: HeaderDigests) {
        for round in 0..<rounds {
            for index in headers {
                let header = header(index)
                let found = header.withUnsafeBufferPointer { cache.digest(of: $0) }
                #expect(found.digest == Data(SHA256.hash(data: header)), "round \(round), header \(index)")
                #expect(found.text == String(decoding: header, as: UTF8.self))
                #expect(cache.counts.kept <= 4, "round \(round), header \(index)")
            }
        }
    }

    /// A header of 80 bytes or more (as an `x5c` header is), distinct by `index` only inside the bytes the key hashes.
    static func header(_ index: Int) -> [UInt8] {
        Array((String(repeating: "h", count: 50) + "-\(index)-" + String(repeating: "y", count: 64)).utf8)
    }

    /// A compact JWS of `header` (taken as is), a small body and a 64-byte signature.
    static func jws(header: String) -> String {
        header + "." + Base64URL.encode(Data(#"{"a":1}"#.utf8)) + "." + Base64URL.encode(Data(repeating: 7, count: 64))
    }
}
