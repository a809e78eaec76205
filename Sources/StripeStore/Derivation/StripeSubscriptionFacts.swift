import Subscriptions

/// Everything read from Stripe about one subscription — the subscription as last read, its invoices, the charges that
/// paid them and their disputes — and the account it belongs to. Each object is kept as last read, so the set held
/// does not depend on the order events arrived in.
public struct StripeSubscriptionFacts: Sendable, Equatable {
    public var subscription: StripeSubscription
    public var invoices: [StripeInvoice]
    public var charges: [StripeCharge]
    public var disputes: [StripeDispute]
    public var account: AccountID?

    public init(
        subscription: StripeSubscription, invoices: [StripeInvoice] = [], charges: [StripeCharge] = [], disputes: [StripeDispute] = [],
        account: AccountID? = nil
    ) {
        self.subscription = subscription
        self.invoices = invoices
        self.charges = charges
        self.disputes = disputes
        self.account = account
    }

    /// The charges that paid `invoice` (by its PaymentIntents).
    func charges(of invoice: StripeInvoice) -> [StripeCharge] {
        let intents = Set(invoice.paymentIntents)
        return charges.filter { $0.paymentIntent.map(intents.contains) ?? false }.sorted { $0.id < $1.id }
    }

    /// The disputes of `invoice`'s charges.
    func disputes(of invoice: StripeInvoice) -> [StripeDispute] {
        let ids = Set(charges(of: invoice).map(\.id))
        return disputes.filter { ids.contains($0.charge) }.sorted { $0.id < $1.id }
    }
}

/// Which account a Stripe subscription belongs to: the Checkout Session's `client_reference_id`, else the
/// subscription's `metadata.storekeeper_account_id`, else an explicit link — the first that names a valid account.
public enum StripeAccountClaim {
    /// The account, and the names that disagree with it (to log).
    public static func resolve(
        checkoutReferences: [String], metadata: String?, linked: AccountID?
    ) -> (account: AccountID?, conflicts: [String]) {
        let named = checkoutReferences.sorted() + [metadata].compactMap { $0 } + [linked?.text].compactMap { $0 }
        let accounts = named.compactMap { AccountID($0) }
        guard let first = accounts.first else { return (nil, []) }
        return (first, Array(Set(accounts.dropFirst().filter { $0 != first }.map(\.text))).sorted())
    }
}
