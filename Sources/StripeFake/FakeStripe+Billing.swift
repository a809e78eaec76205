import Foundation
import StripeStore

/// What Stripe's billing does over time, as its documentation describes it — each step changes the objects and
/// records the events Stripe sends for it. Times are explicit (Unix seconds), as a Stripe test clock's.
extension FakeStripe {
    /// Completes a Checkout Session as a customer paying would: a subscription (in trial when `trialDays` is set, with
    /// its $0 invoice) or a one-time payment, with the customer, invoice, PaymentIntent and charge.
    @discardableResult
    public func completeCheckout(_ sessionId: String, at time: Int64, trialDays: Int? = nil) throws -> StripeCheckoutSession {
        try state.withLock { state in
            guard var session = state.sessions[sessionId], session.status == "open" else { throw FakeStripeError("no open session \(sessionId)") }
            // Stripe's limit on trial_period_days.
            if let trialDays, !(1...730).contains(trialDays) { throw FakeStripeError("trial days must be 1–730") }
            guard let item = session.lineItems?.data.first, let price = item.price.flatMap({ state.prices[$0.id] }) else {
                throw FakeStripeError("the session has no known price")
            }
            let customer = session.customer ?? nextId("cus", in: &state)
            session.customer = customer
            session.status = "complete"
            session.paymentStatus = "paid"
            if session.mode == "subscription" {
                let subscriptionId = nextId("sub", in: &state)
                let start = time
                let end = trialDays.map { time + Int64($0) * 86_400 } ?? Self.advance(time, by: price)
                var subscription = StripeSubscription(
                    id: subscriptionId, customer: customer, status: trialDays == nil ? .active : .trialing,
                    trialStart: trialDays == nil ? nil : start,
                    trialEnd: trialDays == nil ? nil : end, created: time, metadata: state.subscriptionMetadata[sessionId] ?? [:],
                    items: [
                        .init(
                            id: nextId("si", in: &state), price: price, quantity: item.quantity ?? 1, currentPeriodStart: start, currentPeriodEnd: end
                        )
                    ])
                let invoice = paidInvoice(
                    for: &subscription, reason: "subscription_create", lines: [(price, trialDays == nil ? price.unitAmount ?? 0 : 0, start, end)],
                    at: time,
                    in: &state)
                session.subscription = subscriptionId
                state.subscriptions[subscriptionId] = subscription
                send("customer.subscription.created", object: Self.json(subscription, "subscription"), at: time, in: &state)
                send("invoice.paid", object: Self.json(invoice, "invoice"), at: time, in: &state)
            } else {
                let intent = nextId("pi", in: &state)
                session.paymentIntent = intent
                let charge = StripeCharge(
                    id: nextId("ch", in: &state), amount: (price.unitAmount ?? 0) * (item.quantity ?? 1), currency: price.currency,
                    paymentIntent: intent, customer: customer, created: time)
                state.charges[charge.id] = charge
            }
            state.sessions[sessionId] = session
            send("checkout.session.completed", object: Self.json(session, "checkout.session"), at: time, in: &state)
            return session
        }
    }

    /// A subscription an app created through Stripe's API itself, outside any checkout: no session and no metadata
    /// name its account, so only `POST /v1/accounts/{id}/stripe/link` can.
    public func subscribeOutsideCheckout(_ priceId: String, at time: Int64) throws -> String {
        try state.withLock { state in
            guard let price = state.prices[priceId] else { throw FakeStripeError("no price \(priceId)") }
            let id = nextId("sub", in: &state)
            let end = Self.advance(time, by: price)
            var subscription = StripeSubscription(
                id: id, customer: nextId("cus", in: &state), status: .active, trialStart: nil, trialEnd: nil, created: time, metadata: [:],
                items: [.init(id: nextId("si", in: &state), price: price, quantity: 1, currentPeriodStart: time, currentPeriodEnd: end)])
            let invoice = paidInvoice(
                for: &subscription, reason: "subscription_create", lines: [(price, price.unitAmount ?? 0, time, end)], at: time, in: &state)
            state.subscriptions[id] = subscription
            send("customer.subscription.created", object: Self.json(subscription, "subscription"), at: time, in: &state)
            send("invoice.paid", object: Self.json(invoice, "invoice"), at: time, in: &state)
            return id
        }
    }

    /// The end of the current period: the subscription renews (its invoice paid, or failing — `past_due`), or ends
    /// when it was set to cancel at the period's end.
    public func renew(_ id: String, paying: Bool = true) throws {
        try state.withLock { state in
            guard var subscription = state.subscriptions[id], let item = subscription.primaryItem else {
                throw FakeStripeError("no subscription \(id)")
            }
            let start = item.currentPeriodEnd
            if subscription.cancelAtPeriodEnd {
                subscription.status = .canceled
                subscription.endedAt = start
                subscription.canceledAt = subscription.canceledAt ?? start
                subscription.cancellationDetails = .init(reason: "cancellation_requested")
                state.subscriptions[id] = subscription
                send("customer.subscription.deleted", object: Self.json(subscription, "subscription"), at: start, in: &state)
                return
            }
            let end = Self.advance(start, by: item.price)
            subscription.items.data[0].currentPeriodStart = start
            subscription.items.data[0].currentPeriodEnd = end
            let line = (item.price, (item.price.unitAmount ?? 0) * (item.quantity ?? 1), start, end)
            if paying {
                subscription.status = .active
                let invoice = paidInvoice(for: &subscription, reason: "subscription_cycle", lines: [line], at: start, in: &state)
                state.subscriptions[id] = subscription
                send("invoice.paid", object: Self.json(invoice, "invoice"), at: start, in: &state)
            } else {
                subscription.status = .pastDue
                let invoice = invoice(for: subscription, reason: "subscription_cycle", lines: [line], status: "open", at: start, in: &state)
                subscription.latestInvoice = invoice.id
                state.subscriptions[id] = subscription
                send("invoice.payment_failed", object: Self.json(invoice, "invoice"), at: start, in: &state)
            }
            send("customer.subscription.updated", object: Self.json(subscription, "subscription"), at: start, in: &state)
        }
    }

    /// A retry of the open invoice succeeds: the subscription is active again.
    public func payOpenInvoice(_ id: String, at time: Int64) throws {
        try state.withLock { state in
            guard var subscription = state.subscriptions[id], let invoiceId = subscription.latestInvoice, var invoice = state.invoices[invoiceId],
                invoice.status == "open"
            else { throw FakeStripeError("no open invoice of \(id)") }
            pay(&invoice, customer: subscription.customer, at: time, in: &state)
            subscription.status = .active
            state.subscriptions[id] = subscription
            send("invoice.paid", object: Self.json(invoice, "invoice"), at: time, in: &state)
            send("customer.subscription.updated", object: Self.json(subscription, "subscription"), at: time, in: &state)
        }
    }

    /// Retries are exhausted: Stripe cancels the subscription (or marks it `unpaid`), as the account's settings say.
    public func giveUp(_ id: String, at time: Int64, marking status: StripeSubscription.Status = .canceled) throws {
        try state.withLock { state in
            guard var subscription = state.subscriptions[id] else { throw FakeStripeError("no subscription \(id)") }
            subscription.status = status
            if status == .canceled {
                subscription.endedAt = time
                subscription.canceledAt = time
                subscription.cancellationDetails = .init(reason: "payment_failed")
            }
            state.subscriptions[id] = subscription
            send(
                status == .canceled ? "customer.subscription.deleted" : "customer.subscription.updated",
                object: Self.json(subscription, "subscription"), at: time, in: &state)
        }
    }

    /// The customer cancels: at the period's end (renewal off), or now.
    public func cancel(_ id: String, at time: Int64, atPeriodEnd: Bool) throws {
        try state.withLock { state in
            guard var subscription = state.subscriptions[id] else { throw FakeStripeError("no subscription \(id)") }
            subscription.canceledAt = time
            if atPeriodEnd {
                subscription.cancelAtPeriodEnd = true
                state.subscriptions[id] = subscription
                send("customer.subscription.updated", object: Self.json(subscription, "subscription"), at: time, in: &state)
            } else {
                subscription.status = .canceled
                subscription.endedAt = time
                subscription.cancellationDetails = .init(reason: "cancellation_requested")
                state.subscriptions[id] = subscription
                send("customer.subscription.deleted", object: Self.json(subscription, "subscription"), at: time, in: &state)
            }
        }
    }

    /// The price changes mid-period with `proration_behavior=always_invoice`: an invoice now credits the old price's
    /// unused time and charges the new price's, for the rest of the period.
    public func changePrice(_ id: String, to priceId: String, at time: Int64) throws {
        try state.withLock { state in
            guard var subscription = state.subscriptions[id], let item = subscription.primaryItem, let price = state.prices[priceId] else {
                throw FakeStripeError("no subscription \(id) or price \(priceId)")
            }
            let (start, end) = (item.currentPeriodStart, item.currentPeriodEnd)
            let share = Double(end - time) / Double(max(end - start, 1))
            let credit = -Int64((Double(item.price.unitAmount ?? 0) * share).rounded())
            let charge = Int64((Double(price.unitAmount ?? 0) * share).rounded())
            subscription.items.data[0].price = price
            let invoice = paidInvoice(
                for: &subscription, reason: "subscription_update", lines: [(item.price, credit, time, end), (price, charge, time, end)], at: time,
                in: &state)
            state.subscriptions[id] = subscription
            send("customer.subscription.updated", object: Self.json(subscription, "subscription"), at: time, in: &state)
            send("invoice.paid", object: Self.json(invoice, "invoice"), at: time, in: &state)
        }
    }

    /// Refunds `amount` (everything when `nil`) of the charge that paid an invoice.
    public func refund(invoice invoiceId: String, amount: Int64? = nil, at time: Int64) throws {
        try state.withLock { state in
            guard let charge = charge(ofInvoice: invoiceId, in: state) else { throw FakeStripeError("no charge paid \(invoiceId)") }
            refund(charge, amount: amount, at: time, in: &state)
        }
    }

    /// Refunds `amount` (everything when `nil`) of a one-time payment's charge.
    public func refund(paymentIntent: String, amount: Int64? = nil, at time: Int64) throws {
        try state.withLock { state in
            guard let charge = state.charges.values.first(where: { $0.paymentIntent == paymentIntent }) else {
                throw FakeStripeError("no charge of \(paymentIntent)")
            }
            refund(charge, amount: amount, at: time, in: &state)
        }
    }

    /// Refunds `amount` of a charge (what is left of it when `nil`, never more), with a refund object and the event.
    func refund(_ charge: StripeCharge, amount: Int64?, at time: Int64, in state: inout State) {
        var charge = charge
        let left = charge.amount - charge.amountRefunded
        let refunded = min(amount ?? left, left)
        charge.amountRefunded += refunded
        charge.refunds = StripeList(data: (charge.refunds?.data ?? []) + [.init(id: nextId("re", in: &state), amount: refunded, created: time)])
        state.charges[charge.id] = charge
        send("charge.refunded", object: Self.json(charge, "charge"), at: time, in: &state)
    }

    /// The customer's bank disputes the charge that paid an invoice; returns the dispute's id.
    @discardableResult
    public func dispute(invoice invoiceId: String, at time: Int64) throws -> String {
        try state.withLock { state in
            guard let charge = charge(ofInvoice: invoiceId, in: state) else { throw FakeStripeError("no charge paid \(invoiceId)") }
            let dispute = StripeDispute(
                id: nextId("dp", in: &state), charge: charge.id, paymentIntent: charge.paymentIntent, status: "needs_response", amount: charge.amount,
                created: time)
            state.disputes[dispute.id] = dispute
            send("charge.dispute.created", object: Self.json(dispute, "dispute"), at: time, in: &state)
            return dispute.id
        }
    }

    /// The dispute is decided.
    public func closeDispute(_ id: String, won: Bool, at time: Int64) throws {
        try state.withLock { state in
            guard var dispute = state.disputes[id] else { throw FakeStripeError("no dispute \(id)") }
            dispute.status = won ? "won" : "lost"
            state.disputes[id] = dispute
            send("charge.dispute.closed", object: Self.json(dispute, "dispute"), at: time, in: &state)
        }
    }

    // MARK: - Pieces

    func charge(ofInvoice id: String, in state: State) -> StripeCharge? {
        guard let intent = state.invoices[id]?.paymentIntents.first else { return nil }
        return state.charges.values.first { $0.paymentIntent == intent }
    }

    func invoice(
        for subscription: StripeSubscription, reason: String, lines: [(StripePrice, Int64, Int64, Int64)], status: String, at time: Int64,
        in state: inout State
    ) -> StripeInvoice {
        let id = nextId("in", in: &state)
        var invoiceLines: [StripeInvoice.Line] = []
        for (price, amount, start, end) in lines {
            invoiceLines.append(
                .init(id: nextId("il", in: &state), amount: amount, start: start, end: end, price: price.id, unitAmount: price.unitAmount ?? 0))
        }
        let invoice = StripeInvoice(
            id: id, status: status, billingReason: reason, amountPaid: 0, currency: lines.first?.0.currency ?? "usd", customer: subscription.customer,
            created: time, subscription: subscription.id, lines: invoiceLines, paymentIntents: [])
        state.invoices[id] = invoice
        return invoice
    }

    func paidInvoice(
        for subscription: inout StripeSubscription, reason: String, lines: [(StripePrice, Int64, Int64, Int64)], at time: Int64, in state: inout State
    ) -> StripeInvoice {
        var invoice = invoice(for: subscription, reason: reason, lines: lines, status: "open", at: time, in: &state)
        pay(&invoice, customer: subscription.customer, at: time, in: &state)
        subscription.latestInvoice = invoice.id
        return invoice
    }

    func pay(_ invoice: inout StripeInvoice, customer: String?, at time: Int64, in state: inout State) {
        let total = max(invoice.lines.data.reduce(0) { $0 + $1.amount }, 0)
        invoice.status = "paid"
        invoice.amountPaid = total
        if total > 0 {
            let intent = nextId("pi", in: &state)
            invoice.payments = StripeList(data: [.init(id: nextId("inpay", in: &state), paymentIntent: intent)])
            let charge = StripeCharge(
                id: nextId("ch", in: &state), amount: total, currency: invoice.currency, paymentIntent: intent, customer: customer, created: time)
            state.charges[charge.id] = charge
        }
        state.invoices[invoice.id] = invoice
    }

    /// One period of a price after `time` (months clamped to the month's end, as Stripe's billing anchors are).
    static func advance(_ time: Int64, by price: StripePrice) -> Int64 {
        let count = price.recurring?.intervalCount ?? 1
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = Date(timeIntervalSince1970: TimeInterval(time))
        let component: Calendar.Component
        switch price.recurring?.interval {
        case "day": component = .day
        case "week": return time + Int64(count) * 7 * 86_400
        case "year": component = .year
        default: component = .month
        }
        return Int64(calendar.date(byAdding: component, value: count, to: start)!.timeIntervalSince1970)
    }
}

/// A fake operation asked for something that does not exist.
public struct FakeStripeError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
