import Foundation
import X509

/// Loads trust anchors from files. Roots come from configuration only, never from `x5c`.
public enum TrustedRoots {
    /// Reads one certificate, DER or PEM, from `path`.
    public static func load(path: String) throws(VerificationError) -> Certificate {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw VerificationError(.certificate, "cannot read root certificate \(path)")
        }
        return try parse(data, source: path)
    }

    /// Parses one certificate given as DER or PEM bytes.
    public static func parse(_ data: Data, source: String) throws(VerificationError) -> Certificate {
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            guard let certificate = try? Certificate(pemEncoded: text) else {
                throw VerificationError(.certificate, "\(source) is not a valid PEM certificate")
            }
            return certificate
        }
        guard let certificate = try? Certificate(derEncoded: Array(data)) else {
            throw VerificationError(.certificate, "\(source) is not a valid DER certificate")
        }
        return certificate
    }
}
