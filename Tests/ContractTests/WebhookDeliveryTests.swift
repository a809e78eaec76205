import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestSupport
import Testing

@testable import IntegrationSupport

@Suite("Webhooks to the app's services: every event once, in order per account, through crashes and outages")
struct WebhookDeliveryTests {
    /// One of each (the simulated periods are a minute apart, so a renewal comes after the others: it starts a
    /// period at the end of the one in force, a month ahead).
    static let lifecycle = [
        "subscription.started", "subscription.plan_changed", "subscription.billing_issue", "subscription.grace_period_started",
        "subscription.recovered", "subscription.refunded", "subscription.refund_reversed", "subscription.renewed",
        "subscription.expired",
    ]

    @Test("A full lifecycle reaches the receiver once per event and in order, across a kill -9 of work")
    func fullLifecycleAcrossKill() async throws {
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { live in
            let environment = ["STOREKEEPER_WEBHOOKS": receiver.configuration(port: live.port!)]
            try await StorekeeperHarness.run(worker: false, environment: environment) { harness in
                let work = Mutex(try TestProcess("storekeeper", arguments: ["work"], environment: harness.processEnvironment))
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    try await flow.send(.upgrade, target: "max.monthly")
                    // Killed with deliveries of the upgrade most likely under way; the next `work` picks them up.
                    let killed = work.withLock { $0 }
                    killed.signal(SIGKILL)
                    _ = await killed.waitForExit()
                    let restarted = try TestProcess("storekeeper", arguments: ["work"], environment: harness.processEnvironment)
                    work.withLock { $0 = restarted }
                    try await flow.send(.fail)
                    try await flow.send(.grace)
                    try await flow.send(.recover)
                    try await flow.send(.refund)
                    try await flow.send(.refund, LifecycleFlow.reversingTheRefund)
                    try await flow.send(.renew)
                    try await flow.send(.expire)

                    let id = account.uuidString.lowercased()
                    let stored = try await harness.storedEvents(of: id)
                    #expect(stored.map(\.1).filter { $0.hasPrefix("subscription.") } == Self.lifecycle)
                    try await eventually(timeout: .seconds(30), "every event delivered") {
                        Set(receiver.deliveries.map(\.id)) == Set(stored.map(\.0))
                    }
                    // Exactly once per event id, in the account's order (a copy resent after the kill is the same id).
                    let first = receiver.firstCopies.filter { $0.account == id }
                    #expect(first.map(\.id) == stored.map(\.0))
                    #expect(first.map(\.sequence) == first.map(\.sequence).sorted())
                    #expect(first.map(\.type).filter { $0.hasPrefix("subscription.") } == Self.lifecycle)
                    #expect(first.contains { $0.type == "credits.granted" })
                }
                let last = work.withLock { $0 }
                last.signal(SIGTERM)
                _ = await last.waitForExit()
            }
        }
    }

    @Test("A receiver answering 500 for an hour (injected clock) gets everything afterwards, in order; the log shows each attempt")
    func outageOfAnHour() async throws {
        let clock = TestClock()
        let outageEnds = clock.now.addingTimeInterval(3600)
        let receiver = WebhookReceiver { clock.now < outageEnds ? .internalServerError : .ok }
        try await Application(router: receiver.router()).test(.live) { live in
            let environment = ["STOREKEEPER_WEBHOOKS": receiver.configuration(port: live.port!)]
            try await StorekeeperHarness.run(environment: environment, clock: { clock.now }) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    try await flow.send(.renew)
                    let id = account.uuidString.lowercased()
                    let stored = try await harness.storedEvents(of: id)
                    try await eventually("the first attempt refused") { receiver.refusals >= 1 }
                    // Ten minutes at a time for five hours: each step, jobs whose wait (on the injected clock) is over run now.
                    for _ in 0..<30 where Set(receiver.deliveries.map(\.id)) != Set(stored.map(\.0)) {
                        clock.now = clock.now.addingTimeInterval(600)
                        _ = try await harness.count(
                            "WITH due AS (UPDATE jobs SET run_at = now() WHERE kind = 'webhook-delivery' AND state = 'available' RETURNING 1) SELECT count(*) FROM due"
                        )
                        // A minute, not the default 15 s: the receiver and the worker share this process with the whole parallel suite on
                        // two cores, where one 10-s request timeout plus a poll has been seen to pass 15 s.
                        try await eventually(timeout: .seconds(60), "the due deliveries tried") {
                            try await harness.count(
                                "SELECT count(*) FROM jobs WHERE kind = 'webhook-delivery' AND (state = 'running' OR (state = 'available' AND run_at <= now()))"
                            ) == 0
                        }
                    }
                    #expect(receiver.firstCopies.map(\.id) == stored.map(\.0))
                    #expect(receiver.refusals >= 4)
                    #expect(clock.now > outageEnds)
                    // The head event's log: 500s, then a 2xx after the outage.
                    let log = try await harness.client.query(
                        "SELECT coalesce(status_code, 0), attempted_at FROM webhook_attempts WHERE event_id = \(UUID(uuidString: stored[0].0)!) ORDER BY id",
                        logger: TestDatabase.logger)
                    var attempts: [(Int, Date)] = []
                    for try await row in log.decode((Int, Date).self) { attempts.append(row) }
                    #expect(attempts.dropLast().allSatisfy { $0.0 == 500 && $0.1 < outageEnds })
                    #expect(attempts.last.map { $0.0 == 200 && $0.1 >= outageEnds } == true)
                    #expect(try await harness.count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'") == 0)
                }
            }
        }
    }

    @Test(
        "Standard Webhooks' official Python library (PyPI) verifies every delivery as a receiver would — signature and timestamp — also with the server's clock 40 days ahead (dev's moved clock)"
    )
    func officialLibraryVerifies() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_WEBHOOKS_PYTHON"] else {
            print("skipped: Standard Webhooks' Python library is not installed (scripts/test installs it from PyPI)")
            return
        }
        let clock = TestClock()
        clock.now = clock.now.addingTimeInterval(40 * 86_400)
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { live in
            let environment = ["STOREKEEPER_WEBHOOKS": receiver.configuration(port: live.port!)]
            try await StorekeeperHarness.run(environment: environment, clock: { clock.now }) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    try await flow.send(.renew)
                    let stored = try await harness.storedEvents(of: account.uuidString.lowercased())
                    try await eventually(timeout: .seconds(30), "every event delivered") {
                        Set(receiver.deliveries.map(\.id)) == Set(stored.map(\.0))
                    }
                }
            }
        }
        let requests = receiver.received.map { ["headers": $0.headers, "body": $0.body.base64EncodedString()] as [String: Any] }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sk-webhooks-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: requests).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import base64, json, sys
            from standardwebhooks.webhooks import Webhook
            hook = Webhook(sys.argv[1])
            for request in json.load(open(sys.argv[2])):
                event = hook.verify(base64.b64decode(request["body"]), request["headers"])
                print(event["id"])
            """
        let (status, lines) = try await PythonScript.run(python, script, arguments: [receiver.secret.encoded, file.path])
        #expect(status == 0, "\(lines)")
        #expect(lines == receiver.received.compactMap { $0.headers["webhook-id"] }, "\(lines)")
        #expect(!receiver.received.isEmpty)
    }
}
