import Foundation

/// A signed payload and the JWS nested in it, kept as their parts so that what repeats is stored once: each header
/// (`alg` and the `x5c` chain — 70 % of a notification, the same three certificates for months) by its SHA-256
/// digest, each payload as its JSON bytes rather than base64url, each signature as its 64 bytes. ``joined(headers:)``
/// gives back the received text byte for byte; ``init(splitting:nested:)`` refuses any payload for which that would
/// not hold, and the caller keeps such a payload verbatim.
///
/// The encoding (``encoded``), version 1, all integers big-endian:
/// `1 | n | n × 32-byte header digest | n × 64-byte signature | (n − 1) × (u32 offset | u8 name length | name) |
/// n × u32 body length | bodies`. Part 0 is the outer JWS; part `i` is nested in part 0's body as the JSON string
/// value of the field `name`, its contents starting at byte `offset` of the body kept (which leaves them out).
public struct SignedParts: Sendable, Equatable {
    /// One JWS.
    public struct Part: Sendable, Equatable {
        /// The field of the outer payload holding this nested JWS; `nil` for the outer JWS.
        public var name: String?
        /// SHA-256 of the header segment (its base64url text).
        public var headerDigest: Data
        /// The decoded payload; for the outer JWS, without the nested JWS texts.
        public var body: Data
        /// The raw r‖s signature.
        public var signature: Data
    }

    public private(set) var parts: [Part]
    /// Where each nested JWS (``parts`` after the first) goes back into the outer body.
    public private(set) var nestedOffsets: [Int]
    /// The header segments by digest, as needed to store them (each once).
    public private(set) var headers: [Data: String]

    /// Splits `signedPayload`, whose body holds each of `nested` (the field's name, the JWS text) as a JSON string
    /// value. `nil` when it is not a compact JWS with a 64-byte signature, a nested text is not found verbatim, or the
    /// parts would not join back to exactly `signedPayload` (padding, non-canonical base64url).
    public init?(splitting signedPayload: String, nested: [(name: String, text: String)]) {
        guard nested.count < 255, nested.allSatisfy({ $0.name.utf8.count < 256 }), var outer = Self.part(of: signedPayload) else {
            return nil
        }
        var headers = [outer.digest: outer.header]
        var found: [(range: Range<Int>, part: Part)] = []
        for (name, text) in nested {
            guard var inner = Self.part(of: text), let range = Self.rangeOfStringValue(text, in: outer.part.body),
                !found.contains(where: { $0.range.overlaps(range) })
            else { return nil }
            inner.part.name = name
            headers[inner.digest] = inner.header
            found.append((range, inner.part))
        }
        var body = Data()
        var offsets = [Int](repeating: 0, count: found.count)
        var copied = 0
        for index in found.indices.sorted(by: { found[$0].range.lowerBound < found[$1].range.lowerBound }) {
            body.append(outer.part.body.subdata(in: copied..<found[index].range.lowerBound))
            offsets[index] = body.count
            copied = found[index].range.upperBound
        }
        body.append(outer.part.body.subdata(in: copied..<outer.part.body.count))
        outer.part.body = body
        self.parts = [outer.part] + found.map(\.part)
        self.nestedOffsets = offsets
        self.headers = headers
        guard let joined = joinedBytes(headers: headers), Self.equal(joined, signedPayload) else { return nil }
    }

    /// Whether `bytes` are `text`'s UTF-8, compared as memory (a payload is about 18 KB, compared at every intake).
    private static func equal(_ bytes: [UInt8], _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            bytes.withUnsafeBufferPointer { bytes in
                bytes.count == utf8.count && (bytes.count == 0 || memcmp(bytes.baseAddress!, utf8.baseAddress!, bytes.count) == 0)
            }
        }
    }

    /// The payload of the nested JWS in field `name`, as signed.
    public func body(ofNested name: String) -> Data? { parts.dropFirst().first { $0.name == name }?.body }

    /// Reads parts from ``encoded``; `nil` when the bytes are not that encoding.
    public init?(encoded: Data) {
        let bytes = [UInt8](encoded)
        guard bytes.count >= 2, bytes[0] == 1 else { return nil }
        let count = Int(bytes[1])
        var index = 2
        func take(_ length: Int) -> ArraySlice<UInt8>? {
            guard length >= 0, index + length <= bytes.count else { return nil }
            defer { index += length }
            return bytes[index..<index + length]
        }
        func integer() -> Int? { take(4).map { $0.reduce(0) { $0 << 8 | Int($1) } } }
        guard count > 0, let digests = take(count * 32), let signatures = take(count * 64) else { return nil }
        var offsets: [Int] = []
        var names: [String] = []
        for _ in 1..<count {
            guard let offset = integer(), let length = take(1)?.first, let name = take(Int(length)) else { return nil }
            offsets.append(offset)
            names.append(String(decoding: name, as: UTF8.self))
        }
        var lengths: [Int] = []
        for _ in 0..<count {
            guard let length = integer() else { return nil }
            lengths.append(length)
        }
        var parts: [Part] = []
        for (position, length) in lengths.enumerated() {
            guard let body = take(length) else { return nil }
            parts.append(
                Part(
                    name: position == 0 ? nil : names[position - 1], headerDigest: Data(digests.dropFirst(position * 32).prefix(32)),
                    body: Data(body), signature: Data(signatures.dropFirst(position * 64).prefix(64))))
        }
        guard index == bytes.count, offsets.allSatisfy({ $0 <= lengths[0] }) else { return nil }
        self.parts = parts
        self.nestedOffsets = offsets
        self.headers = [:]
    }

    /// The parts as one value to store (see the type's documentation).
    public var encoded: Data {
        var data = Data([1, UInt8(parts.count)])
        func append(_ value: Int) { data.append(contentsOf: withUnsafeBytes(of: UInt32(value).bigEndian, Array.init)) }
        for part in parts { data.append(part.headerDigest) }
        for part in parts { data.append(part.signature) }
        for (offset, part) in zip(nestedOffsets, parts.dropFirst()) {
            append(offset)
            let name = Array((part.name ?? "").utf8)
            data.append(UInt8(name.count))
            data.append(contentsOf: name)
        }
        for part in parts { append(part.body.count) }
        for part in parts { data.append(part.body) }
        return data
    }

    /// The signed payload as received, given the header segments by digest; `nil` when one is missing.
    public func joined(headers: [Data: String]) -> String? {
        joinedBytes(headers: headers).map { String(decoding: $0, as: UTF8.self) }
    }

    /// ``joined(headers:)`` as its bytes (JWS are ASCII).
    func joinedBytes(headers: [Data: String]) -> [UInt8]? {
        func append(_ part: Part, body: Data, to output: inout [UInt8]) -> Bool {
            guard let header = headers[part.headerDigest] else { return false }
            output.append(contentsOf: header.utf8)
            output.append(UInt8(ascii: "."))
            Base64URL.encode(body, into: &output)
            output.append(UInt8(ascii: "."))
            Base64URL.encode(part.signature, into: &output)
            return true
        }
        let outer = parts[0].body
        var body = Data()
        var copied = 0
        for (offset, part) in zip(nestedOffsets, parts.dropFirst()).sorted(by: { $0.0 < $1.0 }) {
            var nested: [UInt8] = []
            guard append(part, body: part.body, to: &nested) else { return nil }
            body.append(outer.subdata(in: copied..<offset))
            body.append(contentsOf: nested)
            copied = offset
        }
        body.append(outer.subdata(in: copied..<outer.count))
        var output: [UInt8] = []
        return append(parts[0], body: body, to: &output) ? output : nil
    }

    /// The digests of the headers split lately (see ``HeaderDigests``).
    private static let headerDigests = HeaderDigests()

    /// The header text, its digest and the other parts of one compact JWS, split in the text's own bytes (a
    /// notification is about 18 KB: not copied to be split).
    private static func part(of text: String) -> (header: String, digest: Data, part: Part)? {
        var text = text
        return text.withUTF8 { bytes -> (header: String, digest: Data, part: Part)? in
            guard let (first, second) = CompactSegments.dots(in: bytes),
                let body = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second])),
                let signature = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(second + 1)...])), signature.count == 64
            else { return nil }
            let header = headerDigests.digest(of: UnsafeBufferPointer(rebasing: bytes[..<first]))
            return (header.text, header.digest, Part(name: nil, headerDigest: header.digest, body: body, signature: signature))
        }
    }

    /// The byte range of `text`'s characters where they are a whole JSON string value (`"…"`) in `body`.
    private static func rangeOfStringValue(_ text: String, in body: Data) -> Range<Int>? {
        let quoted = Array(("\"" + text + "\"").utf8)
        let start = body.withUnsafeBytes { haystack in
            quoted.withUnsafeBytes { needle -> Int? in
                guard let base = haystack.baseAddress, let pattern = needle.baseAddress, needle.count > 0 else { return nil }
                // Each `"` in the body is a candidate (memchr), compared whole (memcmp).
                var from = 0
                while from + needle.count <= haystack.count,
                    let hit = memchr(base + from, Int32(needle[0]), haystack.count - needle.count + 1 - from)
                {
                    let offset = UnsafeRawPointer(hit) - base
                    if memcmp(hit, pattern, needle.count) == 0 { return offset }
                    from = offset + 1
                }
                return nil
            }
        }
        return start.map { ($0 + 1)..<($0 + quoted.count - 1) }
    }
}
