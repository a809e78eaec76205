import Entitlements
import Foundation
import Subscriptions

/// A one-time payment through Checkout (`mode=payment`): a lifetime unlock or a top-up, identified by its
/// PaymentIntent, with what refunds and disputes did to it — a pure function of the session, its charges and their
/// disputes as last read, so any order of events ends alike.
public struct StripePayment: Sendable, Equatable {
    /// The PaymentIntent (`pi_…`): the purchase's id.
    public var id: String
    public var priceId: String
    public var quantity: Int64
    public var account: AccountID?
    public var paidAt: Date
    /// When a full refund or a lost dispute took it back.
    public var endedAt: Date?
    public var endReason: SourceEndReason?
    public var livemode: Bool
    /// The newest fact's time (ms): a newer reading replaces an older one.
    public var newestFact: Int64
    /// What was charged and refunded, in milliunits of ``currency`` (`nil`: no charge read yet).
    public var charged: Int64
    public var refunded: Int64
    public var currency: String?
    /// When the latest refund was made.
    public var refundedAt: Date?

    /// The payment of a completed, paid session; `nil` for any other session.
    public init?(session: StripeCheckoutSession, charges: [StripeCharge], disputes: [StripeDispute]) {
        guard session.mode == "payment", session.paymentStatus == "paid", let intent = session.paymentIntent,
            let item = session.lineItems?.data.first, let price = item.price?.id
        else { return nil }
        let charges = charges.filter { $0.paymentIntent == intent }
        let chargeIds = Set(charges.map(\.id))
        let disputes = disputes.filter { chargeIds.contains($0.charge) }
        id = intent
        priceId = price
        quantity = max(item.quantity ?? 1, 1)
        account =
            session.clientReferenceId.flatMap(AccountID.init)
            ?? session.metadata?[StripeSubscription.accountMetadataKey].flatMap(AccountID.init)
        paidAt = Date(timeIntervalSince1970: TimeInterval(charges.map(\.created).min() ?? session.created ?? 0))
        livemode = session.livemode ?? false
        let paid = charges.reduce(Int64(0)) { $0 + $1.amount }
        let refunded = charges.reduce(Int64(0)) { $0 + $1.amountRefunded }
        let currency = charges.first?.currency.uppercased()
        self.currency = currency
        charged = currency.map { StripeAmount.milliunits(paid, currency: $0.lowercased()) } ?? 0
        self.refunded = currency.map { StripeAmount.milliunits(refunded, currency: $0.lowercased()) } ?? 0
        refundedAt = charges.compactMap(\.refundedAt).max().map { Date(timeIntervalSince1970: TimeInterval($0)) }
        if let lost = disputes.first(where: \.isLost) {
            endedAt = Date(timeIntervalSince1970: TimeInterval(lost.created))
            endReason = .revoke
        } else if paid > 0, refunded >= paid, let at = charges.compactMap(\.refundedAt).max() {
            endedAt = Date(timeIntervalSince1970: TimeInterval(at))
            endReason = .refund
        }
        let times = charges.map(\.created) + charges.compactMap(\.refundedAt) + disputes.map(\.created) + [session.created ?? 0]
        newestFact = (times.max() ?? 0) * 1000
    }

    /// As an entitlement record (a lifetime unlock sold on the web).
    public var record: EntitlementRecord {
        EntitlementRecord(
            id: id, kind: .purchase, store: .stripe, productId: priceId, startsAt: paidAt, endedAt: endedAt, endReason: endReason,
            environment: StoreEnvironment(livemode: livemode), ownership: .purchased, signedDate: newestFact)
    }
}
