import Foundation
import Hummingbird
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// A shared transaction's events fanned out to webhook endpoints (`EventRecorder`, which adds their deliveries and wakes
/// their jobs for the whole transaction at once): every event still reaches every endpoint that takes its type, once,
/// in its account's order.
@Suite("Webhooks: a shared transaction's events fanned out to two endpoints")
struct WebhookFanOutTests {
    @Test(
        "six first purchases of three accounts applied in shared transactions reach an endpoint of every type and one of credits.* only: each event once to each that takes it, in order per account"
    )
    func sharedTransactionToTwoEndpoints() async throws {
        let appReceiver = WebhookReceiver()
        let ledgerReceiver = WebhookReceiver()
        try await Application(router: appReceiver.router()).test(.live) { appServer in
            try await Application(router: ledgerReceiver.router()).test(.live) { ledgerServer in
                let endpoints = """
                    {endpoints: [{name: app, url: 'http://127.0.0.1:\(appServer.port!)/hook', secrets: ['\(appReceiver.secret.encoded)']},
                     {name: ledger, url: 'http://127.0.0.1:\(ledgerServer.port!)/hook', secrets: ['\(ledgerReceiver.secret.encoded)'],
                      types: ['credits.*']}]}
                    """
                let environment = ["STOREKEEPER_WEBHOOKS": endpoints, "STOREKEEPER_APPLIES_PER_TRANSACTION": "8"]
                try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
                    let accounts = (0..<3).map { _ in UUID().uuidString.lowercased() }
                    let purchases = accounts.flatMap { account in
                        (0..<2).map { _ in
                            SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID(uuidString: account)), at: Date())
                        }
                    }
                    try await SharedApplyTests.send(purchases, to: harness)
                    // Until every job is gone: the applies, then the deliveries (a delivery job completes once its POST
                    // was answered).
                    try await SharedApplyTests.applyBacklog(harness, until: "SELECT count(*) FROM jobs")
                    #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 6)
                    #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") < 6, "applies shared a transaction")
                    #expect(
                        try await harness.count(
                            """
                            SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
                            WHERE d.account_id <> e.account_id OR d.sequence <> e.sequence
                            """) == 0, "each delivery names its event's account and sequence")

                    var total = (stored: 0, credits: 0)
                    for account in accounts {
                        let stored = try await harness.storedEvents(of: account)
                        let credits = stored.filter { $0.type.hasPrefix("credits.") }
                        #expect(stored.count > credits.count && !credits.isEmpty, "\(stored.map(\.type))")
                        #expect(appReceiver.firstCopies.filter { $0.account == account }.map(\.id) == stored.map(\.id), "every event, in order")
                        #expect(
                            ledgerReceiver.firstCopies.filter { $0.account == account }.map(\.id) == credits.map(\.id), "credits.* only, in order")
                        total = (total.stored + stored.count, total.credits + credits.count)
                    }
                    #expect(try await harness.count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = 'app'") == total.stored)
                    #expect(try await harness.count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = 'ledger'") == total.credits)
                    #expect(appReceiver.deliveries.count == total.stored && ledgerReceiver.deliveries.count == total.credits, "each once")
                }
            }
        }
    }
}
