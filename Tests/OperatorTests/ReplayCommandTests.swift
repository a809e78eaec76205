import AppStoreModels
import Foundation
import LocalSigning
import Subscriptions
import Testing

@testable import IntegrationSupport

/// `storekeeper replay` over a database holding every kind of purchase, run as the operator runs it.
@Suite("storekeeper replay across stores and one-time purchases, as a process")
struct ReplayCommandTests {
    @Test(
        "replay --all: a Stripe subscription is derived from its held objects, a consumable's ONE_TIME_CHARGE is skipped, not an error; a tampered Stripe state is found, with one lane or four"
    )
    func acrossStores() async throws {
        try await StripeWorld.run { world in
            let account = UUID()
            let accountText = account.uuidString.lowercased()
            // Replay derives at the real time: the purchase happens a minute ago.
            let now = Int64(Date().timeIntervalSince1970)
            _ = try await world.buy("price_pro_monthly", account: accountText, at: now - 60)
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            var transaction = TransactionPayload(
                transactionId: "7000042", originalTransactionId: "7000042", productId: "credits.100",
                bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: (now - 30) * 1000)
            transaction.type = "Consumable"
            transaction.appAccountToken = accountText
            let charge = SimulatedEvent(
                notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: (now - 30) * 1000, transaction: transaction,
                renewalInfo: nil)
            try await LifecycleFlow(harness: world.harness, client: world.http, account: account).post(charge)
            try await world.settle()
            let subscription = try #require(world.fake.state.withLock { $0.subscriptions.keys.first })
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM subscriptions WHERE original_transaction_id = '\(subscription)' AND status = 'active'") == 1)
            #expect(try await world.harness.count("SELECT count(*) FROM notifications WHERE original_transaction_id = '7000042'") == 1)

            let environment = ["DATABASE_URL": world.harness.databaseURL.urlString]
            let (status, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: environment)
            #expect(status == 0, "\(output)")
            #expect(output.contains("\(subscription): matches its stored facts"), "\(output)")
            #expect(output.contains("1 original transaction id(s) of one-time purchases only"), "\(output)")
            let (single, singleOutput) = try await TestProcess.run("storekeeper", ["replay", "--subscription", "7000042"], environment: environment)
            #expect(single == 1 && singleOutput.contains("storekeeper: no subscription 7000042"), "\(singleOutput)")

            try await world.harness.client.query(
                "UPDATE subscriptions SET status = 'expired' WHERE original_transaction_id = \(subscription)", logger: TestDatabase.logger)
            let (differStatus, differs) = try await TestProcess.run("storekeeper", ["replay", "--account", accountText], environment: environment)
            #expect(differStatus == 3, "\(differs)")
            #expect(differs.contains("status: \"expired\" → \"active\""), "\(differs)")
            // It names what it derived with, so a catalogue read from the working directory is told from the server's.
            #expect(differs.contains("derived with the tier catalogue /") && differs.contains("STOREKEEPER_STRIPE_GRACE_DAYS=3"), "\(differs)")
            let (graceStatus, grace) = try await TestProcess.run(
                "storekeeper", ["replay", "--all"], environment: environment.merging(["STOREKEEPER_STRIPE_GRACE_DAYS": "90"]) { _, new in new })
            #expect(graceStatus == 1 && grace.contains("STOREKEEPER_STRIPE_GRACE_DAYS must be an integer in 0...60"), "\(grace)")
            let (laneStatus, lanes) = try await TestProcess.run("storekeeper", ["replay", "--all", "--parallel", "0"], environment: environment)
            #expect(laneStatus != 0 && lanes.contains("--parallel must be 1 to 16, got 0"), "\(lanes)")
            // One lane gives the same answer as four.
            let (oneLane, oneLaneOutput) = try await TestProcess.run(
                "storekeeper", ["replay", "--all", "--parallel", "1"], environment: environment)
            #expect(oneLane == 3 && oneLaneOutput.contains("status: \"expired\" → \"active\""), "\(oneLaneOutput)")

            // A Stripe subscription stored but with no object held cannot be derived: a difference, never "matches".
            try await world.harness.client.query(
                "UPDATE stripe_objects SET id = 'sub_moved_away', subscription_id = NULL WHERE id = \(subscription)", logger: TestDatabase.logger)
            let (heldStatus, held) = try await TestProcess.run("storekeeper", ["replay", "--subscription", subscription], environment: environment)
            #expect(heldStatus == 3 && held.contains("no Stripe subscription object is held"), "\(held)")
            try await world.harness.client.query(
                "UPDATE stripe_objects SET id = \(subscription), subscription_id = \(subscription) WHERE id = 'sub_moved_away'",
                logger: TestDatabase.logger)
            // Its row gone, --all still finds it through its held objects.
            try await world.harness.client.query(
                "DELETE FROM subscriptions WHERE original_transaction_id = \(subscription)", logger: TestDatabase.logger)
            let (goneStatus, gone) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: environment)
            #expect(goneStatus == 3 && gone.contains("\(subscription): differs from its stored facts"), "\(gone)")
        }
    }

    @Test("replay derives a Play subscription from its chain's reads: matches, then a tampered status differs (exit 3), --write mends it")
    func playSubscription() async throws {
        try await GooglePlayWorld.run { world in
            let account = UUID().uuidString.lowercased()
            _ = try await world.push(world.fake.buy(GooglePlayWorld.monthly, accountToken: account, at: Date()).notification)
            try await world.settle()
            let ids = try await world.harness.client.query(
                "SELECT original_transaction_id FROM subscriptions WHERE store = 'google_play'", logger: TestDatabase.logger)
            var found: [String] = []
            for try await id in ids.decode(String.self) { found.append(id) }
            let id = try #require(found.first)
            let environment = ["DATABASE_URL": world.harness.databaseURL.urlString]
            let (status, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: environment)
            #expect(status == 0 && output.contains("\(id): matches its stored facts"), "\(output)")
            try await world.harness.client.query(
                "UPDATE subscriptions SET status = 'expired' WHERE original_transaction_id = \(id)", logger: TestDatabase.logger)
            let (differStatus, differs) = try await TestProcess.run("storekeeper", ["replay", "--account", account], environment: environment)
            #expect(differStatus == 3 && differs.contains("status: \"expired\" → \"active\""), "\(differs)")
            #expect(try await world.harness.count("SELECT count(*) FROM subscriptions WHERE status = 'expired'") == 1, "a dry run stores nothing")
            let (writeStatus, written) = try await TestProcess.run(
                "storekeeper", ["replay", "--subscription", id, "--write"], environment: environment)
            #expect(writeStatus == 0, "\(written)")
            let (againStatus, again) = try await TestProcess.run("storekeeper", ["replay", "--subscription", id], environment: environment)
            #expect(againStatus == 0 && again.contains("matches"), "\(again)")
        }
    }
}
