import Foundation
import Logging
import PostgresNIO
import StripeStore
import Subscriptions

/// What was read from Stripe (`stripe_objects`, sql/0024) and the accounts apps linked (`stripe_links`), on the
/// caller's connection: one statement per intent.
public struct StripeObjectStore: Sendable {
    /// One object as read, and the subscription it concerns.
    public struct Read: Sendable {
        public var id: String
        public var object: String
        public var subscriptionId: String?
        public var body: Data

        public init(id: String, object: String, subscriptionId: String?, body: Data) {
            self.id = id
            self.object = object
            self.subscriptionId = subscriptionId
            self.body = body
        }

        public init(_ value: some Encodable & Sendable, id: String, object: String, subscriptionId: String?) throws {
            self.init(id: id, object: object, subscriptionId: subscriptionId, body: try JSONEncoder().encode(value))
        }
    }

    /// Everything held of one subscription.
    public struct Held: Sendable {
        public var subscription: StripeSubscription?
        public var invoices: [StripeInvoice] = []
        public var charges: [StripeCharge] = []
        public var disputes: [StripeDispute] = []
        public var checkoutSessions: [StripeCheckoutSession] = []
        public var linkedAccount: AccountID?
    }

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Stores `objects` as read at `readAt`: each replaces an older read of itself, never a newer one.
    public func save(_ objects: [Read], readAt: Date, on connection: PostgresConnection) async throws {
        // In id order, so two transactions filing the same objects take their rows in one order.
        for object in objects.sorted(by: { $0.id < $1.id }) {
            try await connection.query(
                """
                INSERT INTO stripe_objects (id, object, subscription_id, body, read_at)
                VALUES (\(object.id), \(object.object), \(object.subscriptionId), \(String(decoding: object.body, as: UTF8.self))::jsonb, \(readAt))
                ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, read_at = EXCLUDED.read_at,
                    subscription_id = coalesce(EXCLUDED.subscription_id, stripe_objects.subscription_id)
                WHERE stripe_objects.read_at <= EXCLUDED.read_at
                """, logger: logger)
        }
    }

    /// Every object held of a subscription, and the account an app linked it to.
    public func held(ofSubscription id: String, on connection: PostgresConnection) async throws -> Held {
        let rows = try await connection.query(
            """
            SELECT object, body::text FROM stripe_objects WHERE subscription_id = \(id) OR id = \(id)
            UNION ALL SELECT 'link', account_id FROM stripe_links WHERE subscription_id = \(id)
            """, logger: logger)
        var held = Held()
        let decoder = JSONDecoder()
        for try await (object, body) in rows.decode((String, String).self) {
            let data = Data(body.utf8)
            switch object {
            case "subscription": held.subscription = try? decoder.decode(StripeSubscription.self, from: data)
            case "invoice": if let invoice = try? decoder.decode(StripeInvoice.self, from: data) { held.invoices.append(invoice) }
            case "charge": if let charge = try? decoder.decode(StripeCharge.self, from: data) { held.charges.append(charge) }
            case "dispute": if let dispute = try? decoder.decode(StripeDispute.self, from: data) { held.disputes.append(dispute) }
            case "checkout.session":
                if let session = try? decoder.decode(StripeCheckoutSession.self, from: data) { held.checkoutSessions.append(session) }
            case "link": held.linkedAccount = AccountID(body)
            default: continue
            }
        }
        return held
    }

    /// Everything held of a one-time payment (by its PaymentIntent): the Checkout Session, its charges and their
    /// disputes.
    public func held(ofPayment paymentIntent: String, on connection: PostgresConnection) async throws -> Held {
        let rows = try await connection.query(
            """
            SELECT object, body::text FROM stripe_objects
            WHERE object IN ('checkout.session', 'charge', 'dispute') AND body->>'payment_intent' = \(paymentIntent)
            """, logger: logger)
        var held = Held()
        let decoder = JSONDecoder()
        for try await (object, body) in rows.decode((String, String).self) {
            let data = Data(body.utf8)
            switch object {
            case "charge": if let charge = try? decoder.decode(StripeCharge.self, from: data) { held.charges.append(charge) }
            case "dispute": if let dispute = try? decoder.decode(StripeDispute.self, from: data) { held.disputes.append(dispute) }
            default: if let session = try? decoder.decode(StripeCheckoutSession.self, from: data) { held.checkoutSessions.append(session) }
            }
        }
        return held
    }

    /// An open Checkout Session Storekeeper created for `account` selling one of `products`, not expired at `now`.
    /// Forgets a Checkout Session Stripe no longer knows (another account's keys, a test clock reset), so it stops
    /// standing for the account's open checkout.
    public func forgetSession(_ id: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM stripe_objects WHERE id = \(id) AND object = 'checkout.session'", logger: logger)
    }

    public func openSession(ofAccount account: AccountID, products: [String], now: Date, on connection: PostgresConnection)
        async throws -> StripeCheckoutSession?
    {
        let rows = try await connection.query(
            """
            SELECT body::text FROM stripe_objects
            WHERE object = 'checkout.session' AND body->>'mode' = 'subscription' AND body->>'client_reference_id' = \(account.text)
              AND body->>'status' = 'open'
              AND body->'metadata'->>\(StripeSubscription.productMetadataKey) = ANY(\(products))
              AND coalesce((body->>'expires_at')::bigint, 0) > \(Int64(now.timeIntervalSince1970))
            ORDER BY read_at DESC LIMIT 1
            """, logger: logger)
        for try await body in rows.decode(String.self) { return try? JSONDecoder().decode(StripeCheckoutSession.self, from: Data(body.utf8)) }
        return nil
    }

    /// Takes the lock of an account's checkout for the rest of the caller's transaction: one session at a time.
    public func lockCheckout(of account: AccountID, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\("stripe-checkout:" + account.text), 0))", logger: logger)
    }

    /// The subscription a stored charge or invoice was filed under.
    public func subscription(ofObject id: String, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query("SELECT subscription_id FROM stripe_objects WHERE id = \(id)", logger: logger)
        for try await (subscription) in rows.decode(String?.self) { return subscription }
        return nil
    }

    /// Links a subscription to an account; the account linked before, when it differs.
    public func link(_ subscriptionId: String, to account: AccountID, on connection: PostgresConnection) async throws -> Link {
        let rows = try await connection.query(
            """
            WITH added AS (
                INSERT INTO stripe_links (subscription_id, account_id) VALUES (\(subscriptionId), \(account))
                ON CONFLICT (subscription_id) DO NOTHING RETURNING account_id
            )
            SELECT account_id, true FROM added
            UNION ALL SELECT account_id, false FROM stripe_links WHERE subscription_id = \(subscriptionId) AND NOT EXISTS (SELECT 1 FROM added)
            """, logger: logger)
        for try await (holder, added) in rows.decode((String, Bool).self) {
            if added { return .added }
            return AccountID(holder).map { $0 == account ? .alreadyLinked : .heldBy($0) } ?? .added
        }
        return .added
    }

    /// What ``link(_:to:on:)`` found: a link another account holds is never moved, whatever made it.
    public enum Link: Sendable, Equatable {
        case added
        case alreadyLinked
        case heldBy(AccountID)
    }

    /// Takes back a link just added.
    public func unlink(_ subscriptionId: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM stripe_links WHERE subscription_id = \(subscriptionId)", logger: logger)
    }

    /// The Stripe customer the app itself gave the account — of its newest Checkout Session naming it
    /// (`client_reference_id`, sql/0047's index), or of a subscription it linked — what checkouts prefill and the billing
    /// portal opens. Never one of a subscription that is the account's by metadata alone: a web checkout may let its
    /// customer set that, and a subscription bought for the account by someone else (a gift, or an attacker) would give
    /// that person's customer — their billing details, their portal over the account's later purchases — to the account.
    /// (A first version took metadata on a subscription no stored session names as the app's word, but a session is
    /// stored only when its own event is processed, which may come later or, after `stripe sync`, never.)
    public func customer(ofAccount account: AccountID, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query(
            """
            SELECT customer FROM (
                SELECT c.body->>'customer' AS customer, (c.body->>'created')::bigint AS created FROM stripe_objects c
                WHERE c.object = 'checkout.session' AND c.body->>'client_reference_id' = \(account.text) AND c.body->>'customer' IS NOT NULL
                UNION ALL
                SELECT o.body->>'customer', (o.body->>'created')::bigint FROM stripe_links l JOIN stripe_objects o ON o.id = l.subscription_id
                WHERE l.account_id = \(account.text) AND o.object = 'subscription' AND o.body->>'customer' IS NOT NULL
            ) AS given
            ORDER BY created DESC NULLS LAST LIMIT 1
            """, logger: logger)
        for try await (customer) in rows.decode(String?.self) { return customer }
        return nil
    }
}
