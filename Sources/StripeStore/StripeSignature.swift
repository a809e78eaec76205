import Crypto
import Foundation

/// Stripe's webhook signature: `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">[,v1=…]`,
/// keyed with the endpoint's secret string as it is (`whsec_…`, all of it, as UTF-8 — unlike Standard Webhooks).
/// Several secrets at once while one is rolled; `v0` (Stripe's test scheme) is ignored; timestamps older than the
/// tolerance are refused, as Stripe's own libraries refuse them.
public struct StripeSignature: Sendable {
    public let secrets: [String]
    /// How old a signature may be, in seconds (Stripe's libraries: 300).
    public let tolerance: TimeInterval

    public init(secrets: [String], tolerance: TimeInterval = 300) {
        self.secrets = secrets
        self.tolerance = tolerance
    }

    /// Why a request's signature is refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// The header is missing or not `t=…,v1=…`: the request is malformed (400).
        case malformedHeader(String)
        /// No `v1` matches any secret (401).
        case noMatch
        /// Signed longer ago than the tolerance, or in the future beyond it (401); `seconds` is the signature's age:
        /// positive when it was signed before now, negative when its time is still to come.
        case outsideTolerance(seconds: Int64)
    }

    /// What the sender is told of `refusal`: an old signature was signed so long "ago", an early one so far "in the
    /// future" — the way round a sender looking at its clock needs.
    public func message(for refusal: Refusal) -> String {
        switch refusal {
        case .malformedHeader(let why): return why
        case .noMatch: return "no v1 signature matches a configured secret"
        case .outsideTolerance(let age):
            return "signed \(age.magnitude) s \(age > 0 ? "ago" : "in the future"), beyond the tolerance of \(Int(tolerance)) s"
        }
    }

    /// Checks `header` against `body` at `now`; the signing time on success.
    public func verify(header: String?, body: some DataProtocol, now: Date) throws(Refusal) -> Date {
        guard let header, !header.isEmpty else { throw .malformedHeader("the Stripe-Signature header is missing") }
        guard header.utf8.count <= 4096 else { throw .malformedHeader("the Stripe-Signature header is longer than 4 KiB") }
        var timestamp: Int64?
        var signatures: [Data] = []
        for item in header.split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw .malformedHeader("Stripe-Signature items are key=value") }
            let key = pair[0].trimmingCharacters(in: .whitespaces)
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            switch key {
            case "t":
                guard timestamp == nil, let seconds = Int64(value), seconds > 0 else { throw .malformedHeader("t must be one number of seconds") }
                timestamp = seconds
            case "v1":
                // A v1 that is not 64 hex digits can match nothing; it is skipped like a scheme we do not know.
                if let bytes = Self.hexBytes(value), bytes.count == 32 { signatures.append(bytes) }
            default:
                continue
            }
        }
        guard let timestamp else { throw .malformedHeader("Stripe-Signature has no t=") }
        var message = Data("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let matched = secrets.contains { secret in
            let key = SymmetricKey(data: Data(secret.utf8))
            return signatures.contains { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: key) }
        }
        guard matched else { throw .noMatch }
        let age = Int64(now.timeIntervalSince1970.rounded(.down)) - timestamp
        guard Double(abs(age)) <= tolerance else { throw .outsideTolerance(seconds: age) }
        return Date(timeIntervalSince1970: Double(timestamp))
    }

    /// The header Stripe would send for `body` signed at `timestamp` with every secret (tests, the fake Stripe).
    public func header(body: some DataProtocol, timestamp: Int64) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let parts = secrets.map { secret in
            "v1="
                + HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8))).map { String(format: "%02x", $0) }
                .joined()
        }
        return (["t=\(timestamp)"] + parts).joined(separator: ",")
    }

    static func hexBytes(_ text: String) -> Data? {
        guard text.utf8.count % 2 == 0 else { return nil }
        var bytes = Data(capacity: text.utf8.count / 2)
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = hexValue(high), let l = hexValue(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
