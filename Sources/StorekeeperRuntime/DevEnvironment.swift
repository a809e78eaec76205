import Crypto
import Foundation
import LocalSigning

/// The state `storekeeper dev` keeps under `./.storekeeper/`: the private cluster, a local Apple-shaped signing
/// chain, a service API key, and `dev.env`, which `storekeeper simulate` reads to find the server.
public struct DevEnvironment: Sendable {
    public let directory: URL

    public init(directory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".storekeeper")) {
        self.directory = directory
    }

    public var signingDirectory: URL { directory.appendingPathComponent("signing") }
    public var clusterDirectory: URL { directory.appendingPathComponent("postgres") }
    public var settingsFile: URL { directory.appendingPathComponent("dev.env") }

    /// The signing chain, generated on first use.
    public func signingChain() throws -> LocalSigningChain {
        if FileManager.default.fileExists(atPath: signingDirectory.appendingPathComponent(LocalSigningChain.FileName.leafKey).path) {
            return try LocalSigningChain.load(from: signingDirectory)
        }
        let chain = try LocalSigningChain.generate()
        try chain.save(to: signingDirectory)
        return chain
    }

    /// The service API key, generated on first use.
    public func apiKey() throws -> String { try secret(file: "api-key", prefix: "sk_dev_") }

    /// `STOREKEEPER_ERASURE_KEY` of this dev database, generated on first use and kept beside it: erasures filed
    /// under one key are found only with the same key.
    public func erasureKey() throws -> String { try secret(file: "erasure-key", prefix: "ek_dev_") }

    /// The dev database's `STOREKEEPER_ERASURE_KEY` when `dev` made one, without making it.
    public func existingErasureKey() -> String? {
        let key = (try? String(contentsOf: directory.appendingPathComponent("erasure-key"), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return key?.isEmpty == false ? key : nil
    }

    /// A random secret kept in `file` (owner-only), made on first use.
    private func secret(file name: String, prefix: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        if let existing = try? String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            !existing.isEmpty
        {
            return existing
        }
        let key = prefix + SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.map { String(format: "%02x", $0) }.joined()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try key.write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return key
    }

    /// `STOREKEEPER_ADMIN_KEYS` for `dev`: its own key as the admin `dev`, then the operator's `entries`. A named entry,
    /// because a bare key beside `name:role:key` entries is refused (it is most often a named key split at a comma),
    /// and named operator keys must work in dev to try the roles; only beside a list of bare keys, as earlier versions
    /// were configured, is it bare too.
    public static func adminKeys(devKey: String, adding entries: String?) -> String {
        let entries = entries?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !entries.isEmpty else { return "dev:admin:\(devKey)" }
        let bareOnly = !entries.split(separator: ",").contains { $0.contains(":") }
        return (bareOnly ? devKey : "dev:admin:\(devKey)") + "," + entries
    }

    /// Writes the settings `simulate` and the operator commands read, as shell assignments `source` takes as they
    /// are: each value single-quoted (a database URL holds `&` and `?`).
    public func writeSettings(_ settings: [String: String]) throws {
        let text =
            settings.sorted { $0.key < $1.key }
            .map { "export \($0.key)='\($0.value.replacingOccurrences(of: "'", with: "'\\''"))'" }.joined(separator: "\n") + "\n"
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try text.write(to: settingsFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: settingsFile.path)
    }

    /// The settings written by a running `dev`, or empty.
    public func settings() -> [String: String] {
        guard let text = try? String(contentsOf: settingsFile, encoding: .utf8) else { return [:] }
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let assignment = line.hasPrefix("export ") ? line.dropFirst("export ".count) : line[...]
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            var value = String(assignment[assignment.index(after: equals)...])
            if value.hasPrefix("'"), value.hasSuffix("'"), value.count >= 2 {
                value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "'\\''", with: "'")
            }
            settings[String(assignment[..<equals])] = value
        }
        return settings
    }
}
