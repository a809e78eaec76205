import ArgumentParser
import Foundation
import LocalSigning
import NIOCore
import StorekeeperRuntime

struct RetryDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retries",
        abstract: "Apple's retry pattern: the same notifications re-sent later, shuffled, change nothing; re-deliveries out of order neither.")

    @Option(help: "Subscriptions, each with a history of four notifications.") var subscriptions = 200

    func run() async throws {
        var verdict = DrillVerdict("retries")
        try await withDrillSystem(workers: 1, clients: 16) { system, _, _ in
            // Histories signed over the last hours: purchase, auto-renew off, upgrade, auto-renew back on.
            let origin = Date().addingTimeInterval(-6 * 3600)
            var histories: [[(uuid: UUID, event: SimulatedEvent)]] = []
            for index in 0..<subscriptions {
                let subscription = SimulatedEvent.Subscription(
                    originalTransactionId: String(4_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(),
                    bundleId: SystemUnderTest.bundleId)
                let start = origin.addingTimeInterval(Double(index))
                let purchase = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: start)
                let period = DateInterval(start: start, duration: subscription.period)
                let off = SimulatedEvent.scenario(.cancel, subscription: subscription, currentPeriod: period, at: start.addingTimeInterval(3600))
                let upgrade = SimulatedEvent.scenario(
                    .upgrade, subscription: subscription, currentPeriod: period, target: "max.monthly", at: start.addingTimeInterval(7200))
                var upgraded = subscription
                upgraded.productId = "max.monthly"
                let newPeriod = DateInterval(start: start.addingTimeInterval(7200), duration: subscription.period)
                var on = SimulatedEvent.scenario(.cancel, subscription: upgraded, currentPeriod: newPeriod, at: start.addingTimeInterval(10_800))
                on.subtype = "AUTO_RENEW_ENABLED"
                on.renewalInfo?.autoRenewStatus = 1
                histories.append([purchase, off, upgrade, on].map { (UUID(), $0) })
            }
            func bodies(_ items: [(uuid: UUID, event: SimulatedEvent)]) throws -> [ByteBuffer] {
                try items.map { ByteBuffer(data: try system.signer.requestBody(for: $0.event, notificationUUID: $0.uuid)) }
            }
            func digests() async throws -> (String, String) {
                let state = try await system.text(
                    """
                    SELECT md5(string_agg(concat_ws('|', original_transaction_id, account_id, product_id, status, will_renew,
                        auto_renew_product_id, pending_product_id, purchase_date, expires_at, end_reason, latest_transaction_id),
                        ',' ORDER BY original_transaction_id)) FROM subscriptions
                    """)
                let ledger = try await system.text(
                    "SELECT md5(string_agg(operation_key || ' ' || delta, ',' ORDER BY operation_key)) FROM credit_ledger")
                return (state, ledger)
            }
            let total = subscriptions * 4
            // In order, as Apple first delivers them.
            for step in 0..<4 {
                let answers = await sendAll(try bodies(histories.map { $0[step] }), system: system, clients: 16)
                verdict.check(answers.allSatisfy { $0.answer == "accepted" }, "delivery \(step + 1) of 4 accepted")
                _ = try await system.eventually(120) {
                    try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == subscriptions * (step + 1)
                }
            }
            let inOrder = try await digests()
            let upgraded = try await system.count("SELECT count(*) FROM subscriptions WHERE product_id = 'max.monthly' AND will_renew")
            verdict.check(upgraded == subscriptions, "every subscription upgraded and renewing (\(upgraded))")

            // Hours later Apple retries: the same notifications, same notificationUUIDs, any order.
            let retried = await sendAll(try bodies(histories.flatMap { $0 }.shuffled()), system: system, clients: 16)
            verdict.check(retried.allSatisfy { $0.answer == "duplicate" }, "all \(total) retries answered 200 duplicate")
            verdict.check(try await digests() == inOrder, "subscriptions and credit ledger unchanged by the retries")

            // Re-deliveries under new notificationUUIDs, shuffled: applied again, out of order, to the same end.
            let redelivered = histories.flatMap { $0 }.map { (uuid: UUID(), event: $0.event) }.shuffled()
            let again = await sendAll(try bodies(redelivered), system: system, clients: 16)
            verdict.check(again.allSatisfy { $0.answer == "accepted" }, "\(total) shuffled re-deliveries accepted")
            let applied = try await system.eventually(180) {
                try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == 2 * total
            }
            verdict.check(applied, "re-deliveries applied")
            let unchanged = try await system.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'unchanged'")
            say("  re-deliveries whose facts were already held (nothing changed): \(unchanged)")
            verdict.check(try await digests() == inOrder, "subscriptions and credit ledger equal to in-order delivery")
        }
        try verdict.finish()
    }
}
