/// What a Stripe event type asks the worker to read again — the types Storekeeper listens to, grouped by the object
/// they name; every other type is ``other(_:)`` and only acknowledged.
public enum StripeEventKind: Hashable, Sendable {
    /// `checkout.session.completed`, `checkout.session.async_payment_succeeded`: a session paid.
    case checkoutCompleted
    /// `customer.subscription.*`: the subscription changed.
    case subscriptionChanged
    /// `invoice.paid`, `invoice.payment_succeeded`, `invoice.payment_failed`, `invoice.voided`,
    /// `invoice.marked_uncollectible`: an invoice of a subscription.
    case invoiceChanged
    /// `charge.refunded`, `charge.refund.updated`: a refund of a charge.
    case chargeRefunded
    /// `charge.dispute.*`: a dispute of a charge.
    case disputeChanged
    case other(String)

    public init(type: String) {
        switch type {
        case "checkout.session.completed", "checkout.session.async_payment_succeeded": self = .checkoutCompleted
        case "invoice.paid", "invoice.payment_succeeded", "invoice.payment_failed", "invoice.voided", "invoice.marked_uncollectible":
            self = .invoiceChanged
        case "charge.refunded", "charge.refund.updated": self = .chargeRefunded
        case let type where type.hasPrefix("customer.subscription."): self = .subscriptionChanged
        case let type where type.hasPrefix("charge.dispute."): self = .disputeChanged
        default: self = .other(type)
        }
    }
}
