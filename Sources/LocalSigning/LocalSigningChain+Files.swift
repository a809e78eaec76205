import Crypto
import Foundation
import X509

extension LocalSigningChain {
    /// File names inside a signing directory.
    public enum FileName {
        public static let root = "root.pem"
        public static let intermediate = "intermediate.pem"
        public static let leaf = "leaf.pem"
        public static let leafKey = "leaf-key.pem"
    }

    /// Writes the three certificates and the leaf key as PEM files (the key readable by the owner only).
    public func save(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try root.serializeAsPEM().pemString.write(to: directory.appendingPathComponent(FileName.root), atomically: true, encoding: .utf8)
        try intermediate.serializeAsPEM().pemString.write(
            to: directory.appendingPathComponent(FileName.intermediate), atomically: true, encoding: .utf8)
        try leaf.serializeAsPEM().pemString.write(to: directory.appendingPathComponent(FileName.leaf), atomically: true, encoding: .utf8)
        let keyURL = directory.appendingPathComponent(FileName.leafKey)
        try leafKey.pemRepresentation.write(to: keyURL, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyURL.path)
    }

    /// Reads a chain written by ``save(to:)``.
    public static func load(from directory: URL) throws -> LocalSigningChain {
        func text(_ name: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
        return LocalSigningChain(
            root: try Certificate(pemEncoded: text(FileName.root)),
            intermediate: try Certificate(pemEncoded: text(FileName.intermediate)),
            leaf: try Certificate(pemEncoded: text(FileName.leaf)),
            leafKey: try P256.Signing.PrivateKey(pemRepresentation: text(FileName.leafKey))
        )
    }
}
