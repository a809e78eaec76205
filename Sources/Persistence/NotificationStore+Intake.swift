import Entitlements
import Foundation
import Jobs
import PostgresNIO
import StatementFencing

// The Apple intake's one statement: a group of verified notifications stored, with the apply jobs of those not stored
// before, in one round trip (NotificationInbox shapes them and groups the requests).
extension NotificationStore {
    /// A verified notification as its `notifications` row and apply job.
    public struct NewNotification: Sendable {
        public var uuid: UUID
        public var notificationType: String
        public var subtype: String?
        public var environment: String?
        public var originalTransactionId: String?
        public var signedDate: Int64
        /// The signed payload as ``SignedParts``, or verbatim when its parts would not join back exactly.
        public var signed: SignedForm
        /// The `decoded` copy, for a payload kept verbatim or rejected for its content; `nil` when the parts are the facts.
        public var decoded: String?
        /// Why the content is outside ``ContentLimits`` (the job then records `rejected_content`); `nil` when fine.
        public var rejectedReason: String?
        public var job: NewJob

        public init(
            uuid: UUID, notificationType: String, subtype: String?, environment: String?, originalTransactionId: String?, signedDate: Int64,
            signed: SignedForm, decoded: String?, rejectedReason: String?, job: NewJob
        ) {
            (self.uuid, self.notificationType, self.subtype, self.environment) = (uuid, notificationType, subtype, environment)
            (self.originalTransactionId, self.signedDate, self.signed, self.decoded) = (originalTransactionId, signedDate, signed, decoded)
            (self.rejectedReason, self.job) = (rejectedReason, job)
        }
    }

    /// How the signed payload is kept.
    public enum SignedForm: Sendable {
        /// The parts as stored (compressed), and the header segments they name by digest.
        case parts(stored: ByteBuffer, headers: [Data: String])
        case verbatim(String)
    }

    /// Inserts `notifications` not stored before, and the apply jobs of those, with the header segments of `headers`
    /// not stored yet, in one statement; returns the uuids inserted.
    public func insertNew(_ notifications: [NewNotification], headers: [Data: String], on connection: PostgresConnection) async throws -> Set<UUID> {
        Set(try await connection.run(StoreNotifications(entries: notifications, headers: headers), logger: logger))
    }

    /// Inserts notifications not stored before and the apply jobs of those, returning the uuids inserted.
    struct StoreNotifications: PostgresPreparedStatement {
        static let sql = """
            WITH headers AS (
            INSERT INTO signed_headers (digest, segment) SELECT * FROM unnest($1::bytea[], $2::text[])
            ON CONFLICT (digest) DO NOTHING
            ), stored AS (
            INSERT INTO notifications (notification_uuid, notification_type, subtype, environment,
                original_transaction_id, signed_date, signed_parts, signed_payload, decoded, rejected_reason)
            SELECT uuid, type, NULLIF(subtype, ''), NULLIF(environment, ''), NULLIF(subscription, ''), signed_date,
                NULLIF(signed_parts, ''::bytea), NULLIF(signed_payload, ''), NULLIF(decoded, '')::jsonb, NULLIF(rejected, '')
            FROM unnest($3, $4, $5, $6, $7, $8, $9::bytea[], $10, $11, $12)
                 AS input(uuid, type, subtype, environment, subscription, signed_date, signed_parts, signed_payload, decoded, rejected)
            ON CONFLICT (notification_uuid) DO NOTHING
            RETURNING notification_uuid
            ), queued AS (
            \(JobBatchInsert.sql(firstParameter: 13, guardKeys: "SELECT notification_uuid::text FROM stored"))
            )
            SELECT notification_uuid FROM stored
            """
        static let bindingDataTypes: [PostgresDataType] =
            [
                .byteaArray, .textArray, .uuidArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .byteaArray, .textArray,
                .textArray, .textArray,
            ] + JobBatchInsert.bindingDataTypes
        var entries: [NewNotification]
        /// Header segments by digest, to store unless already stored.
        var headers: [Data: String]

        /// Arrays cannot carry NULLs through the binding, so absent texts travel as '' and become NULL.
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 20)
            let headers = Array(headers)
            bindings.append(headers.map { ByteBuffer(bytes: $0.key) })
            bindings.append(headers.map(\.value))
            bindings.append(entries.map(\.uuid))
            bindings.append(entries.map(\.notificationType))
            bindings.append(entries.map { $0.subtype ?? "" })
            bindings.append(entries.map { $0.environment ?? "" })
            bindings.append(entries.map { $0.originalTransactionId ?? "" })
            bindings.append(entries.map(\.signedDate))
            bindings.append(
                entries.map { entry in
                    guard case .parts(let stored, _) = entry.signed else { return ByteBuffer() }
                    return stored
                })
            bindings.append(
                entries.map { entry in
                    guard case .verbatim(let text) = entry.signed else { return "" }
                    return text
                })
            bindings.append(entries.map { $0.decoded ?? "" })
            bindings.append(entries.map { $0.rejectedReason ?? "" })
            JobBatchInsert(entries.map { ($0.uuid.lowercasedText, $0.job) }).appendBindings(to: &bindings)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> UUID { try row.decode(UUID.self) }
    }
}
