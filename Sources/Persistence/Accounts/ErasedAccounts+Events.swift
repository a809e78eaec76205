import Events
import Foundation
import PostgresNIO
import Subscriptions

extension ErasedAccounts {
    /// Other accounts' events that name the account as the other party of a transfer of one of its subscriptions
    /// (`subscription.transferred`: the new owner's names the former as `fromAccountId`, the former's names the new as
    /// `toAccountId`, each in its key too): that id becomes the pseudonym there. The account's own
    /// events are deleted with the rest; these are the only events of another account that name it.
    func rewriteTransferEvents(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection)
        async throws -> Int
    {
        let rows = try await connection.query(
            """
            SELECT id, account_id, dedup_key, body::text, body_deflated FROM events
            WHERE type = 'subscription.transferred' AND subscription_id = ANY(\(held)) AND account_id <> \(account.text)
            """, logger: logger)
        var rewrites: [(id: UUID, key: String, body: ByteBuffer?)] = []
        for try await (id, recipient, key, text, deflated) in rows.decode((UUID, String, String, String?, ByteBuffer?).self) {
            // `transferred:<subscription>:<period>:<the other party>:<the recipient>` (SubscriptionChanges), compared
            // byte for byte (an id's other Unicode spelling is another account).
            let suffix = Array(":\(account.text):\(recipient)".utf8)
            let named = key.utf8.count > suffix.count && key.utf8.suffix(suffix.count).elementsEqual(suffix)
            let renamed = named ? String(decoding: key.utf8.dropLast(suffix.count), as: UTF8.self) + ":\(pseudonym.text):\(recipient)" : key
            guard text == nil else {
                // Stored before sql/0013 as jsonb: rewritten in SQL below.
                if named { rewrites.append((id, renamed, nil)) }
                continue
            }
            guard let deflated else { continue }
            let body = String(buffer: try CompressedColumn.decompress(deflated))
            // The members as the event's writer wrote them (JSONWriter), so only a value equal to the id matches.
            var rewritten = body
            for name in ["fromAccountId", "toAccountId"] {
                rewritten = rewritten.replacingOccurrences(
                    of: Self.member(name, account.text), with: Self.member(name, pseudonym.text), options: .literal)
            }
            guard rewritten != body else { continue }
            rewrites.append((id, renamed, try CompressedColumn.compress(rewritten.utf8)))
        }
        for rewrite in rewrites {
            if let body = rewrite.body {
                try await connection.query(
                    "UPDATE events SET dedup_key = \(rewrite.key), body = NULL, body_deflated = \(body) WHERE id = \(rewrite.id)", logger: logger)
            } else {
                // Only the member that names the other party: the recipient's status and the cause may hold a value
                // equal to the id that is not about it (a numeric account id and a transaction id).
                let (id, other) = (account.text, pseudonym.text)
                try await connection.query(
                    """
                    UPDATE events SET dedup_key = \(rewrite.key), body = CASE
                        WHEN body #>> '{change,fromAccountId}' = \(id) THEN jsonb_set(body, '{change,fromAccountId}', to_jsonb(\(other)::text))
                        WHEN body #>> '{change,toAccountId}' = \(id) THEN jsonb_set(body, '{change,toAccountId}', to_jsonb(\(other)::text))
                        ELSE body END
                    WHERE id = \(rewrite.id)
                    """, logger: logger)
            }
        }
        return rewrites.count
    }

    /// `"name":"value"` as ``JSONWriter`` writes a member.
    private static func member(_ name: String, _ value: String) -> String {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.member(name, value)
        writer.endObject()
        return String(decoding: writer.bytes.dropFirst().dropLast(), as: UTF8.self)
    }
}
