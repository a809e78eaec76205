import Foundation
import GooglePlay
import Logging
import PostgresNIO

/// One-time products' reads (`google_products`), voided orders (`google_voided_purchases`) and the acknowledgements
/// Google awaits (`google_acknowledgements`), sql/0035, on the caller's connection: one statement per intent.
public struct GoogleProductStore: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Keeps `read` as the purchase's newest, unless a read asked for later is held already; a `PURCHASED` read is also
    /// kept as the newest granted one.
    public func save(_ read: PlayProductRead, body: [UInt8], on connection: PostgresConnection) async throws {
        let purchase = read.purchase
        let purchased = purchase.purchaseState == .purchased
        let bytes = ByteBuffer(bytes: body)
        try await connection.query(
            """
            INSERT INTO google_products
                (purchase_token, order_id, product_id, purchase_state, account_token, read_at, body, purchased_read_at, purchased_body,
                 purchased_account_token)
            VALUES (\(read.purchaseToken), \(purchase.orderId), \(purchase.lineItems.first?.productId ?? ""), \(purchase.purchaseState.text),
                \(purchase.obfuscatedExternalAccountId), \(read.readAt), \(bytes), \(purchased ? read.readAt : nil), \(purchased ? bytes : nil),
                \(purchased ? purchase.obfuscatedExternalAccountId : nil))
            ON CONFLICT (purchase_token) DO UPDATE SET
                -- The newest read by the time it was asked; the newest PURCHASED read likewise, apart: a PURCHASED read
                -- asked earlier that commits later still counts as granted.
                order_id = CASE WHEN excluded.read_at > google_products.read_at THEN coalesce(excluded.order_id, google_products.order_id) ELSE google_products.order_id END,
                product_id = CASE WHEN excluded.read_at > google_products.read_at THEN excluded.product_id ELSE google_products.product_id END,
                purchase_state = CASE WHEN excluded.read_at > google_products.read_at THEN excluded.purchase_state ELSE google_products.purchase_state END,
                account_token = CASE WHEN excluded.read_at > google_products.read_at THEN coalesce(excluded.account_token, google_products.account_token)
                    ELSE google_products.account_token END,
                body = CASE WHEN excluded.read_at > google_products.read_at THEN excluded.body ELSE google_products.body END,
                read_at = greatest(excluded.read_at, google_products.read_at),
                purchased_body = CASE WHEN excluded.purchased_read_at > coalesce(google_products.purchased_read_at, '-infinity')
                    THEN excluded.purchased_body ELSE google_products.purchased_body END,
                purchased_account_token = CASE WHEN excluded.purchased_read_at > coalesce(google_products.purchased_read_at, '-infinity')
                    THEN excluded.purchased_account_token ELSE google_products.purchased_account_token END,
                purchased_read_at = greatest(excluded.purchased_read_at, google_products.purchased_read_at)
            """, logger: logger)
    }

    /// The newest read of a purchase token, and its newest read that said `PURCHASED`, if any are held.
    public func reads(_ token: String, on connection: PostgresConnection) async throws -> (newest: PlayProductRead, purchased: PlayProductRead?)? {
        let rows = try await connection.query(
            "SELECT read_at, body, purchased_read_at, purchased_body FROM google_products WHERE purchase_token = \(token)", logger: logger)
        for try await (readAt, body, purchasedAt, purchasedBody) in rows.decode((Date, ByteBuffer, Date?, ByteBuffer?).self) {
            let decoder = JSONDecoder()
            let newest = PlayProductRead(
                purchaseToken: token, readAt: readAt, purchase: try decoder.decode(ProductPurchaseV2.self, from: Data(body.readableBytesView)))
            var purchased: PlayProductRead?
            if let purchasedAt, let purchasedBody {
                purchased = PlayProductRead(
                    purchaseToken: token, readAt: purchasedAt,
                    purchase: try decoder.decode(ProductPurchaseV2.self, from: Data(purchasedBody.readableBytesView)))
            }
            return (newest, purchased)
        }
        return nil
    }

    /// The newest read of a purchase token, if one is held.
    public func read(_ token: String, on connection: PostgresConnection) async throws -> PlayProductRead? {
        try await reads(token, on: connection)?.newest
    }

    /// The purchase token of a one-time product's order, if it was read.
    public func token(ofOrder orderId: String, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query("SELECT purchase_token FROM google_products WHERE order_id = \(orderId) LIMIT 1", logger: logger)
        for try await token in rows.decode(String.self) { return token }
        return nil
    }

    /// Records a refund Google reported; false when it was recorded already (the same notification or list entry again).
    @discardableResult
    public func recordVoided(_ voided: VoidedPurchase, seenVia: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO google_voided_purchases (order_id, purchase_token, voided_at, is_partial, quantity, source, reason, seen_via)
            VALUES (\(voided.orderId), \(voided.purchaseToken), \(voided.voidedAt), \(voided.isPartial), \(voided.quantity), \(voided.source),
                \(voided.reason), \(seenVia))
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Every refund recorded for `tokens`.
    public func voided(of tokens: [String], on connection: PostgresConnection) async throws -> [VoidedPurchase] {
        let rows = try await connection.query(
            """
            SELECT purchase_token, order_id, voided_at, source, reason, quantity, is_partial FROM google_voided_purchases
            WHERE purchase_token = ANY(\(tokens))
            """, logger: logger)
        var voided: [VoidedPurchase] = []
        for try await (token, order, at, source, reason, quantity, partial) in rows.decode((String, String, Date, Int?, Int?, Int64?, Bool).self) {
            voided.append(
                VoidedPurchase(
                    purchaseToken: token, orderId: order, voidedAt: at, source: source, reason: reason, quantity: quantity, isPartial: partial))
        }
        return voided
    }

    /// Notes that a purchase was granted and Google waits to be told — `grantedAt` is the purchase's own time, from which
    /// Google counts its three days; an earlier note stands.
    public func awaitAcknowledgement(_ token: String, kind: String, productId: String, grantedAt: Date, on connection: PostgresConnection)
        async throws
    {
        try await connection.query(
            """
            INSERT INTO google_acknowledgements (purchase_token, kind, product_id, granted_at) VALUES (\(token), \(kind), \(productId), \(grantedAt))
            ON CONFLICT (purchase_token) DO NOTHING
            """, logger: logger)
    }

    /// Records that Google accepted the acknowledgement (or the consumption), or why it did not yet.
    public func recordAcknowledgement(_ token: String, at date: Date?, error: String?, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE google_acknowledgements SET acknowledged_at = coalesce(acknowledged_at, \(date)), last_error = \(error)
            WHERE purchase_token = \(token)
            """, logger: logger)
    }

    /// A purchase still waiting for its acknowledgement.
    public struct Waiting: Sendable, Equatable {
        public var purchaseToken: String
        public var kind: String
        public var productId: String
        public var grantedAt: Date
        public var lastError: String?
    }

    /// Purchases granted before `before` and not acknowledged yet, oldest first, and how many there are in all.
    public func waitingAcknowledgement(grantedBefore before: Date, limit: Int, on connection: PostgresConnection) async throws -> (
        count: Int, oldest: [Waiting]
    ) {
        let rows = try await connection.query(
            """
            SELECT a.purchase_token, a.kind, a.product_id, a.granted_at, a.last_error, count(*) OVER ()::bigint FROM google_acknowledgements a
            WHERE a.acknowledged_at IS NULL AND a.granted_at < \(before)
              -- A purchase refunded whole needs no acknowledgement any more (a subscription's refunded period does not end it).
              AND NOT EXISTS (SELECT 1 FROM google_voided_purchases v WHERE v.purchase_token = a.purchase_token AND NOT v.is_partial AND a.kind <> 'subscription')
            ORDER BY a.granted_at LIMIT \(limit)
            """, logger: logger)
        var count = 0
        var oldest: [Waiting] = []
        for try await (token, kind, product, granted, error, total) in rows.decode((String, String, String, Date, String?, Int).self) {
            oldest.append(Waiting(purchaseToken: token, kind: kind, productId: product, grantedAt: granted, lastError: error))
            count = total
        }
        return (count, oldest)
    }
}
