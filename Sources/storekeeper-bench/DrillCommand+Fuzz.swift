import ArgumentParser
import Foundation
import NIOCore
import StorekeeperRuntime

struct FuzzDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fuzz", abstract: "Fuzzed and mutated bodies against the intake: no crash, no 5xx but 503, nothing forged accepted.")

    @Option(help: "Bodies sent.") var bodies = 10_000
    @Option(help: "Seed of the mutations.") var seed: UInt64 = 20_261_121

    func run() async throws {
        var verdict = DrillVerdict("fuzz")
        var random = DrillRandom(state: seed)
        try await withDrillSystem(workers: 1, clients: 16) { system, _, _ in
            let originals = try (0..<50).map { index -> String in
                let body = try system.subscribe(index, at: Date()).body
                let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: String]
                return object?["signedPayload"] ?? ""
            }
            let authentic = Set(originals)
            var payloads: [String?] = []
            var fuzzed: [ByteBuffer] = []
            for _ in 0..<bodies {
                let (body, payload) = Self.mutate(originals[Int(random.next() % UInt64(originals.count))], random: &random)
                fuzzed.append(body)
                payloads.append(payload)
            }
            let answers = await sendAll(fuzzed, system: system, clients: 16)
            let statuses = Dictionary(grouping: answers.map { $0.status.map(String.init) ?? "no answer" }, by: { $0 }).mapValues(\.count)
            say("  answers: \(statuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))")
            verdict.check(answers.allSatisfy { $0.status != nil }, "every body got an answer")
            verdict.check(answers.allSatisfy { [200, 400, 401, 413, 503].contains($0.status ?? 0) }, "only 200, 400, 401, 413 or 503 — no other 5xx")
            let forged = answers.indices.filter { answers[$0].status == 200 && !(payloads[$0].map(authentic.contains) ?? false) }
            verdict.check(forged.isEmpty, "nothing accepted that is not one of the authentic payloads, byte for byte (\(forged.count) forged)")
            let stored = try await system.count("SELECT count(*) FROM notifications")
            verdict.check(stored <= originals.count, "at most the \(originals.count) authentic notifications stored (\(stored))")
            let alive = await system.post(ByteBuffer(string: "{}"))
            verdict.check(alive.status == 400, "serve still answers")
        }
        try verdict.finish()
    }

    /// One mutated body and the signedPayload it carries (nil when it carries none).
    static func mutate(_ payload: String, random: inout DrillRandom) -> (ByteBuffer, String?) {
        var bytes = Array(payload.utf8)
        let kind = random.next() % 10
        switch kind {
        case 0...4:  // flip 1–4 bytes of the JWS
            for _ in 0...(random.next() % 4) {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] ^= UInt8(1 << (random.next() % 7))
            }
        case 5:  // truncate
            bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
        case 6:  // swap two segments
            var parts = payload.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if parts.count == 3 { parts.swapAt(Int(random.next() % 3), Int(random.next() % 3)) }
            bytes = Array(parts.joined(separator: ".").utf8)
        case 7:  // random bytes in place of a segment
            var parts = payload.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let noise = (0..<Int(random.next() % 400)).map { _ in Character(UnicodeScalar(UInt8(33 + random.next() % 90))) }
            if parts.count == 3 { parts[Int(random.next() % 3)] = String(noise) }
            bytes = Array(parts.joined(separator: ".").utf8)
        case 8:  // not the expected JSON at all
            let shapes = [
                "", "null", "[]", "{\"signedPayload\": 7}", "{\"signedPayload\": null}", "{\"other\": \"x\"}", "\u{0}\u{1}",
                String(repeating: "{", count: 500),
            ]
            return (ByteBuffer(string: shapes[Int(random.next() % UInt64(shapes.count))]), nil)
        default:  // an oversized body
            return (ByteBuffer(string: "{\"signedPayload\": \"" + String(repeating: "A", count: 600 * 1024) + "\"}"), nil)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let body = (try? JSONEncoder().encode(["signedPayload": text])).map { ByteBuffer(data: $0) } ?? ByteBuffer()
        return (body, text)
    }
}

/// SplitMix64: reproducible mutations from a seed.
struct DrillRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
