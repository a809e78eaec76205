import Foundation
import Logging
import PostgresNIO
import SignedData

/// The signed payloads of stored notifications: joined back from their parts for `verify --stored`, and cleared
/// after the retention period (the verified facts in `decoded`, which replay reads, stay).
public struct SignedPayloadArchive: Sendable {
    /// What is kept of one notification's signed payload.
    public enum Stored: Sendable, Equatable {
        /// Joined back from its parts, byte for byte as received.
        case joined(String)
        /// Kept verbatim: stored before parts existed, or its parts would not have joined back exactly.
        case verbatim(String)
        /// Cleared after the retention period; only the verified facts remain.
        case cleared
    }

    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// The signed payload of notification `uuid`; `nil` when no such notification is stored.
    public func signedPayload(of uuid: UUID, on connection: PostgresConnection) async throws -> Stored? {
        let rows = try await connection.query(
            "SELECT signed_parts, signed_payload FROM notifications WHERE notification_uuid = \(uuid)", logger: logger)
        var found: (parts: ByteBuffer?, verbatim: String?)?
        for try await row in rows.decode((ByteBuffer?, String?).self) { found = row }
        guard let found else { return nil }
        if let verbatim = found.verbatim { return .verbatim(verbatim) }
        guard let stored = found.parts else { return .cleared }
        let parts = try SignedParts(storedValue: stored)
        let digests = parts.parts.map { ByteBuffer(bytes: $0.headerDigest) }
        var headers: [Data: String] = [:]
        let headerRows = try await connection.query(
            "SELECT digest, segment FROM signed_headers WHERE digest = ANY(\(digests))", logger: logger)
        for try await (digest, segment) in headerRows.decode((ByteBuffer, String).self) {
            headers[Data(digest.readableBytesView)] = segment
        }
        guard let joined = parts.joined(headers: headers) else {
            throw PersistenceError(.corruptRecord, "a signed header of notification \(uuid) is missing")
        }
        return .joined(joined)
    }

    /// Clears the signed payloads of up to `limit` notifications received before `cutoff`, writing the `decoded` copy
    /// of those whose parts were their facts; returns how many. Run it in a transaction: the rows are locked between
    /// the read and the write.
    public func clearSignedPayloads(receivedBefore cutoff: Date, limit: Int, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            SELECT notification_uuid, signed_parts FROM notifications
            WHERE received_at < \(cutoff) AND (signed_parts IS NOT NULL OR signed_payload IS NOT NULL)
            ORDER BY received_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """, logger: logger)
        var uuids: [UUID] = []
        var decoded: [String] = []
        for try await (uuid, parts) in rows.decode((UUID, ByteBuffer?).self) {
            uuids.append(uuid)
            // Rows with a `decoded` copy keep it (the empty text leaves it as it is).
            let facts = try? StoredNotificationFacts.notification(decoded: nil, parts: parts)
            decoded.append(try facts.flatMap { $0 }.map(StoredNotificationFacts.decodedText(of:)) ?? "")
        }
        guard !uuids.isEmpty else { return 0 }
        // A row whose parts do not decode keeps them: its facts are nowhere else.
        let cleared = try await connection.query(
            """
            WITH cleared AS (
                UPDATE notifications n SET decoded = coalesce(n.decoded, NULLIF(c.decoded, '')::jsonb), signed_parts = NULL,
                    signed_payload = NULL
                FROM unnest(\(uuids)::uuid[], \(decoded)::text[]) AS c(uuid, decoded)
                WHERE n.notification_uuid = c.uuid AND (n.decoded IS NOT NULL OR c.decoded <> '')
                RETURNING 1)
            SELECT count(*)::int FROM cleared
            """, logger: logger)
        for try await count in cleared.decode(Int.self) { return count }
        return 0
    }
}
