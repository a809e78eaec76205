import Crypto
import Foundation
import PostgresNIO

extension ErasedAccounts {
    /// What is hashed under the key to fingerprint it: `printf %s 'storekeeper erasure key fingerprint' | openssl dgst
    /// -sha256 -hmac "$STOREKEEPER_ERASURE_KEY"` prints the same, so an operator can tell which of their keys it is.
    static let fingerprintText = "storekeeper erasure key fingerprint"

    /// The fingerprint of the deployment's key, kept by sql/0067: hex HMAC-SHA256 of a fixed text under the key, which
    /// does not give the key away; `nil` without a key.
    public var keyFingerprint: String? {
        key.map { Self.hex(HMAC<SHA256>.authenticationCode(for: Data(Self.fingerprintText.utf8), using: $0)) }
    }

    /// Throws ``PersistenceError/Code/erasureKeyDiffers`` when accounts were erased under another key than this
    /// process's, or under a key while it has none: erased ids are kept only as their HMAC under that key, so such a
    /// process would not recognise them, and would file Apple's next renewal naming an erased id under the id again.
    ///
    /// - Parameter recording: record this process's key as the erasures' when they were filed before the fingerprint
    ///   was kept (sql/0067); `serve` and `work` do at start, `replay` does not, since a wrong key given to a one-off
    ///   command must not become the one every process is then held to.
    public func confirmKey(recording: Bool, at now: Date, on connection: PostgresConnection) async throws {
        var recorded = try await recordedKey(on: connection)
        if recorded == nil, recording, let fingerprint = keyFingerprint, try await anyErased(on: connection) {
            // The first process to get here wins; one with another key then reads the winner's.
            try await connection.query(
                """
                INSERT INTO erasure_key_fingerprint (fingerprint, recorded_at) VALUES (\(fingerprint), \(now)) ON CONFLICT DO NOTHING
                """, logger: logger)
            recorded = try await recordedKey(on: connection)
        }
        guard let recorded else { return }
        let since = recorded.at.formatted(Date.ISO8601FormatStyle())
        guard let fingerprint = keyFingerprint else {
            throw PersistenceError(
                .erasureKeyDiffers,
                "STOREKEEPER_ERASURE_KEY is not set, and accounts were erased under a key (fingerprint \(recorded.fingerprint.prefix(16)), recorded \(since)): without it their ids are not recognised, and Apple's next renewal naming one would be filed under the id again; set the key they were erased under (docs/configuration.md)"
            )
        }
        guard recorded.fingerprint == fingerprint else {
            throw PersistenceError(
                .erasureKeyDiffers,
                "STOREKEEPER_ERASURE_KEY is not the key accounts were erased under (its fingerprint is \(fingerprint.prefix(16)), theirs \(recorded.fingerprint.prefix(16)), recorded \(since)): with another key their ids are not recognised, and Apple's next renewal naming one would be filed under the id again; set the key they were erased under (docs/configuration.md)"
            )
        }
    }

    private func anyErased(on connection: PostgresConnection) async throws -> Bool {
        for try await any in try await connection.query("SELECT EXISTS (SELECT 1 FROM erased_accounts)", logger: logger).decode(Bool.self) {
            return any
        }
        return false
    }

    /// The fingerprint erasures were filed under, and since when it is known.
    private func recordedKey(on connection: PostgresConnection) async throws -> (fingerprint: String, at: Date)? {
        for try await (fingerprint, at) in try await connection.query(
            "SELECT fingerprint, recorded_at FROM erasure_key_fingerprint", logger: logger
        ).decode((String, Date).self) { return (fingerprint, at) }
        return nil
    }
}
