import AppStoreModels
import Credits
import Foundation
import Jobs
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// Turns a subscription's lifecycle effects into ledger rows, inside the caller's transaction (the one that
    /// saved `state`): cycle grants, upgrade carry-over and proration, window extensions, refund and revocation
    /// removals, their reversal, and prorated clawbacks of earlier periods.
    public func record(_ effects: [LifecycleEffect], state: SubscriptionState, now: Date, on connection: PostgresConnection)
        async throws
    {
        guard effects.contains(where: \.touchesCredits) else { return }
        // Plain grants only insert; whatever reads balances (carry-over, removals, clawbacks) must not race a spend.
        if effects.contains(where: \.readsBalances), let account = state.accountId { try await lockAccount(account, on: connection) }
        for effect in effects {
            switch effect {
            case .periodStarted(let period, let replaced):
                try await startPeriod(period, replacing: replaced, account: state.accountId, on: connection)
            case .periodExtended(let transactionId, let until):
                try await connection.query(
                    """
                    UPDATE credit_buckets SET valid_until = \(until)
                    WHERE key IN (SELECT key FROM credit_buckets WHERE transaction_id = \(transactionId) AND kind = 'cycle'
                                  AND valid_until = (SELECT max(valid_until) FROM credit_buckets WHERE transaction_id = \(transactionId)))
                        AND valid_until < \(until)
                    """,
                    logger: logger)
            case .ended(let reason, let transactionId, _) where reason == "REFUND" || reason == "REVOKE":
                try await removeCycleCredits(of: transactionId, operation: reason.lowercased(), on: connection)
            case .ended, .recheckRenewal:
                continue
            case .refundReversed(let transactionId):
                try await connection.query(
                    """
                    INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                    SELECT 'reversed:' || operation_key, bucket, -delta, 'refund reversed'
                    FROM credit_ledger WHERE operation_key LIKE \("refund:" + transactionId + ":%") OR operation_key LIKE \("clawback:" + transactionId + ":%")
                    ON CONFLICT (operation_key) DO NOTHING
                    """,
                    logger: logger)
            case .earlierPeriodRefunded(let transactionId, let milliPercent):
                try await removeCycleCredits(of: transactionId, operation: "refund", on: connection)
                if let milliPercent, let account = state.accountId {
                    try await clawBack(earlier: transactionId, milliPercent: milliPercent, account: account, now: now, on: connection)
                }
            }
        }
    }

    /// A new period's cycle grant per meter; for an upgrade, the old period's unused credits move to top-ups first
    /// and the grant is prorated by what the customer effectively paid.
    func startPeriod(
        _ period: LifecycleEffect.Period, replacing replaced: LifecycleEffect.Period?, account: UUID?,
        on connection: PostgresConnection
    ) async throws {
        guard let (tier, product) = catalogue.tier(ofProduct: period.productId) else { return }
        let monthly = product.billingPeriod?.resetsMonthly == true
        let window = monthly
            ? CreditCalendar.monthlyWindow(anchor: period.start, end: period.end, month: 0)
            : DateInterval(start: period.start, end: max(period.start, period.end))
        if let replaced {
            let oldBuckets = try await cycleBuckets(ofTransaction: replaced.transactionId, on: connection)
            for bucket in oldBuckets where bucket.balance > 0 && (bucket.validUntil.map { $0 > period.start } ?? true) {
                guard let account else { break }
                let topUp = Bucket.topUp(account: account, meter: bucket.meter)
                try await open(topUp, on: connection)
                if try await post("carry:\(period.transactionId):\(bucket.key):out", bucket: bucket.key, delta: -bucket.balance, reason: "upgrade carry-over", on: connection) {
                    try await post("carry:\(period.transactionId):\(bucket.key):in", bucket: topUp.key, delta: bucket.balance, reason: "upgrade carry-over", on: connection)
                }
            }
            try await connection.query(
                "UPDATE credit_buckets SET valid_until = \(period.start) WHERE transaction_id = \(replaced.transactionId) AND kind = 'cycle' AND (valid_until IS NULL OR valid_until > \(period.start))",
                logger: logger)
        }
        for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
            guard var amount = allowance.cycleGrant(isTrial: period.isTrial) else { continue }
            if let replaced {
                let oldPrice = replaced.price ?? catalogue.tier(ofProduct: replaced.productId)?.product.price ?? 0
                amount = Proration.upgradeGrant(
                    allowance: amount, newPrice: period.price ?? product.price, oldPrice: oldPrice,
                    remaining: Self.milliseconds(replaced.end.timeIntervalSince(period.start)),
                    cycle: Self.milliseconds(replaced.end.timeIntervalSince(replaced.start)))
            }
            let bucket = Bucket(
                key: "cycle:\(period.transactionId):m0:\(meter)", meter: meter, kind: .cycle,
                originalTransactionId: period.originalTransactionId, transactionId: period.transactionId,
                window: window, price: period.price ?? product.price)
            try await post("grant:\(period.transactionId):m0:\(meter)", opening: bucket, delta: amount,
                           reason: replaced == nil ? (period.isTrial ? "trial grant" : "cycle grant") : "prorated upgrade grant", on: connection)
        }
        if monthly, window.end < period.end {
            let job = try NewJob(
                kind: Self.monthlyResetJobKind,
                arguments: MonthlyReset(originalTransactionId: period.originalTransactionId, transactionId: period.transactionId, month: 1),
                runAt: window.end, uniqueKey: "credit-reset:\(period.transactionId):m1")
            _ = try await queue.enqueue(job, on: connection)
        }
    }

    /// Removes what is left in the cycle buckets of a refunded or revoked period (never below zero).
    func removeCycleCredits(of transactionId: String, operation: String, on connection: PostgresConnection) async throws {
        for bucket in try await cycleBuckets(ofTransaction: transactionId, on: connection) where bucket.balance > 0 {
            try await post("\(operation):\(transactionId):\(bucket.key)", bucket: bucket.key, delta: -bucket.balance, reason: operation, on: connection)
        }
    }

    /// A prorated refund of an earlier period: `ceil(granted × percentage)` of that period's grants, taken from the
    /// account's live credits of the same meter in spend order, never below zero.
    func clawBack(earlier transactionId: String, milliPercent: Int32, account: UUID, now: Date, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            SELECT b.meter, coalesce(sum(l.delta), 0)::bigint FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE b.transaction_id = \(transactionId) AND l.operation_key LIKE 'grant:%' GROUP BY b.meter ORDER BY b.meter
            """,
            logger: logger)
        var granted: [(String, Int64)] = []
        for try await row in rows.decode((String, Int64).self) { granted.append(row) }
        for (meter, amount) in granted {
            var due = Proration.clawback(granted: amount, milliPercent: milliPercent)
            for bucket in try await liveBuckets(of: account, meter: meter, at: now, on: connection) where due > 0 && bucket.balance > 0 {
                let take = min(due, bucket.balance)
                try await post("clawback:\(transactionId):\(bucket.key)", bucket: bucket.key, delta: -take, reason: "prorated refund", on: connection)
                due -= take
            }
        }
    }

    /// A consumable purchase (ONE_TIME_CHARGE, or a transaction an app posted): top-up credits per the catalogue;
    /// its refund takes them back, never below zero. Returns false when the product is not a top-up.
    @discardableResult
    public func recordOneTimePurchase(_ transaction: TransactionPayload, account: UUID, on connection: PostgresConnection)
        async throws -> Bool
    {
        guard let topUp = catalogue.topUp(ofProduct: transaction.productId) else { return false }
        try await lockAccount(account, on: connection)
        let bucket = Bucket.topUp(account: account, meter: topUp.meter)
        let quantity = Int64(max(transaction.quantity ?? 1, 1))
        try await post("topup:\(transaction.transactionId)", opening: bucket, delta: topUp.credits * quantity, reason: "top-up \(topUp.id)", on: connection)
        if transaction.revocationDate != nil {
            let granted = topUp.credits * quantity
            let available = try await balance(of: bucket.key, on: connection)
            try await post("refund:\(transaction.transactionId):\(bucket.key)", bucket: bucket.key, delta: -min(granted, max(available, 0)), reason: "top-up refunded", on: connection)
        }
        return true
    }

    static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }
}

extension LifecycleEffect {
    var readsBalances: Bool {
        switch self {
        case .periodStarted(_, let replaced): return replaced != nil
        case .ended, .earlierPeriodRefunded: return touchesCredits
        case .periodExtended, .refundReversed, .recheckRenewal: return false
        }
    }

    var touchesCredits: Bool {
        switch self {
        case .periodStarted, .periodExtended, .refundReversed, .earlierPeriodRefunded: return true
        case .ended(let reason, _, _): return reason == "REFUND" || reason == "REVOKE"
        case .recheckRenewal: return false
        }
    }
}
