import AppStoreModels
import Application
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport
@testable import Jobs

@Suite("Apple intake and status, on real PostgreSQL")
struct IntakeTests {
    @Test("a verified notification is accepted, applied by the worker, and the account is subscribed")
    func acceptedAndApplied() async throws {
        try await StorekeeperHarness.run { harness in
            let account = UUID()
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: account), at: Date())
            let body = try harness.signer.requestBody(for: event)
            try await harness.withHTTP { client in
                let response = try await client.postNotification(body)
                #expect(response.status == .ok)
                #expect(try response.answer(IntakeAnswer.self).status == "accepted")
                try await eventually("the account to be subscribed") {
                    let status = try await client.getWithKey("/v1/accounts/\(account)/status")
                    return try status.answer(StatusAnswer.self).state == "subscribed"
                }
                let answer = try await client.getWithKey("/v1/accounts/\(account)/status")
                let status = try answer.answer(StatusAnswer.self)
                #expect(status.entitled == true)
                #expect(status.hadSubscription == true)
                let subscription = try #require(status.subscription)
                #expect(subscription.status == "active")
                #expect(subscription.willRenew == true)
                // A key's presence (null or not) is not a decoded value: read raw on purpose.
                #expect((answer.json["subscription"] as? [String: Any])?.keys.contains("pendingProductId") == true)
            }
        }
    }

    @Test("the same notification twice — at once and after it was applied — is a duplicate: stored once, applied once")
    func duplicate() async throws {
        try await StorekeeperHarness.run { harness in
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            let body = try harness.signer.requestBody(for: event)
            try await harness.withHTTP { client in
                #expect(try await client.postNotification(body).answer(IntakeAnswer.self).status == "accepted")
                let second = try await client.postNotification(body)
                #expect(second.status == .ok)
                #expect(try second.answer(IntakeAnswer.self).status == "duplicate")
            }
            try await eventually("the apply job to finish") { try await harness.count("SELECT count(*) FROM job_history") == 1 }
            // Redelivered once applied: its job's unique key is free again, yet nothing is enqueued.
            try await harness.withHTTP { client in
                let again = try await client.postNotification(body)
                #expect(try again.answer(IntakeAnswer.self).status == "duplicate")
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 1)
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 0)
            #expect(try await harness.count("SELECT count(*) FROM job_history") == 1)
        }
    }

    @Test("a notification's apply job run again (requeued) changes nothing and keeps the first outcome and its time")
    func applyRunAgain() async throws {
        try await StorekeeperHarness.run { harness in
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            let uuid = UUID()
            try await harness.withHTTP { client in
                let answer = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: uuid))
                #expect(try answer.answer(IntakeAnswer.self).status == "accepted")
            }
            try await eventually("the apply job to finish") { try await harness.count("SELECT count(*) FROM job_history") == 1 }
            // The first outcome's time moved an hour back, so that a second write of it would show.
            try await harness.client.query("UPDATE notifications SET applied_at = applied_at - interval '1 hour'", logger: TestDatabase.logger)
            let facts = [
                "SELECT count(*) FROM notifications WHERE apply_outcome = 'applied' AND applied_at < now() - interval '59 minutes'",
                "SELECT count(*) FROM subscriptions", "SELECT count(*) FROM credit_ledger", "SELECT count(*) FROM events",
                "SELECT coalesce(sum(delta), 0)::int8 FROM credit_ledger",
            ]
            var before: [Int] = []
            for sql in facts { before.append(try await harness.count(sql)) }
            #expect(before[0] == 1 && before[1] == 1 && before[2] > 0 && before[3] > 0)
            let job = try NewJob(kind: NotificationInbox.applyJobKind, arguments: NotificationInbox.ApplyArguments(notificationUUID: uuid))
            _ = try await harness.client.withConnection { try await harness.components.queue.enqueue(job, on: $0) }
            try await eventually("the second run to finish") {
                try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 2
            }
            var after: [Int] = []
            for sql in facts { after.append(try await harness.count(sql)) }
            #expect(after == before, "the outcome and its time, the subscription, its ledger and its events as the first run left them")
        }
    }

    @Test("an apply whose claim was lost (rescued, claimed again) writes nothing; the new claim applies it once")
    func applyWithLostClaim() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            try await harness.withHTTP { client in
                let answer = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: UUID()))
                #expect(try answer.answer(IntakeAnswer.self).status == "accepted")
            }
            let queue = harness.components.queue
            let first = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            // Its worker is dead as far as anyone knows: the job is rescued and claimed again.
            #expect(try await queue.rescueAbandonedJobs(staleAfter: .seconds(30)) == 1)
            let second = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            let apply = ApplyNotificationJob(
                client: harness.client, writer: harness.components.writer, credits: harness.components.credits,
                refunds: nil, logger: TestDatabase.logger)
            await #expect(throws: (any Error).self) { try await apply.run(JobExecution(job: first, queue: queue)) }
            let written = [
                "SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL", "SELECT count(*) FROM subscriptions",
                "SELECT count(*) FROM credit_ledger", "SELECT count(*) FROM events", "SELECT count(*) FROM job_history",
            ]
            for sql in written { #expect(try await harness.count(sql) == 0, "rolled back: \(sql)") }
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'running' AND attempt = 2") == 1)
            try await apply.run(JobExecution(job: second, queue: queue))
            for sql in written { #expect(try await harness.count(sql) >= 1, "written: \(sql)") }
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 0)
        }
    }

    @Test("a tampered signature, a chain to an untrusted root: 401, nothing stored")
    func unauthenticated() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            let payload = try harness.signer.signedPayload(for: event)
            var parts = payload.split(separator: ".").map(String.init)
            var signature = Array(parts[2])
            signature[10] = signature[10] == "A" ? "B" : "A"
            parts[2] = String(signature)
            let tampered = try JSONEncoder().encode(["signedPayload": parts.joined(separator: ".")])

            let stranger = NotificationSigner(signer: try JWSSigner(chain: try LocalSigningChain.generate()), bundleId: StorekeeperHarness.bundleId)
            let untrusted = try stranger.requestBody(for: event)
            try await harness.withHTTP { client in
                for body in [tampered, untrusted] {
                    let response = try await client.postNotification(body)
                    #expect(response.status == .unauthorized)
                    #expect(try response.answer(ErrorAnswer.self).error == "verification_failed")
                }
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 0)
        }
    }

    @Test("garbage, a missing signedPayload, a 2-part JWS: 400; a 600 KiB body: 413")
    func badInput() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                for body in ["garbage", "{}", #"{"signedPayload": 42}"#, #"{"signedPayload": "a.b"}"#, #"{"signedPayload": "a.b.c"}"#] {
                    let response = try await client.postNotification(Data(body.utf8))
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(throws: Never.self) { try response.answer(ErrorAnswer.self) }
                }
                let large = Data(#"{"signedPayload": ""#.utf8) + Data(repeating: 0x41, count: 600 * 1024) + Data(#""}"#.utf8)
                let response = try await client.postNotification(large)
                #expect(response.status == .contentTooLarge)
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 0)
        }
    }

    @Test("authentic but for another app: 200 ignored, not stored")
    func ignored() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let other = NotificationSigner(signer: harness.signer.signer, bundleId: "com.someone.else")
            var subscription = harness.subscription(account: UUID())
            subscription.bundleId = "com.someone.else"
            let body = try other.requestBody(for: SimulatedEvent.scenario(.subscribe, subscription: subscription, at: Date()))
            try await harness.withHTTP { client in
                let response = try await client.postNotification(body)
                #expect(response.status == .ok)
                #expect(try response.answer(IntakeAnswer.self).status == "ignored")
                #expect(try response.answer(IntakeAnswer.self).reason?.contains("bundle") == true)
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 0)
        }
    }

    @Test("notifications without a subscription snapshot are stored and their jobs complete")
    func otherTypes() async throws {
        try await StorekeeperHarness.run { harness in
            let test = SimulatedEvent(
                notificationType: "TEST", subtype: nil, status: nil, signedDate: 1_767_225_600_000, transaction: nil, renewalInfo: nil)
            let unknown = SimulatedEvent(
                notificationType: "SOMETHING_NEW", subtype: "FUTURE", status: nil, signedDate: 1_767_225_600_000, transaction: nil, renewalInfo: nil)
            try await harness.withHTTP { client in
                for event in [test, unknown] {
                    let body = try harness.signer.requestBody(for: event)
                    let response = try await client.postNotification(body)
                    #expect(try response.answer(IntakeAnswer.self).status == "accepted")
                }
            }
            try await eventually("both jobs to complete") {
                try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 2
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'recorded'") == 2)
        }
    }

    @Test("past expiresAt the account is free, though no EXPIRED ever arrived")
    func clockRule() async throws {
        let clock = TestClock()
        try await StorekeeperHarness.run(clock: { clock.now }) { harness in
            let account = UUID()
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: account), at: Date())
            try await harness.withHTTP { client in
                _ = try await client.postNotification(try harness.signer.requestBody(for: event))
                try await eventually("the account to be subscribed") {
                    try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self).state == "subscribed"
                }
                clock.now = Date().addingTimeInterval(31 * 86_400)
                let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                #expect(status.state == "free_with_credits")
                #expect(status.entitled == false)
                #expect(status.hadSubscription == true)
            }
        }
    }

    @Test("the service API wants a valid bearer key; unknown accounts are free")
    func serviceAPI() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                #expect(try await client.execute(uri: "/v1/accounts/\(account)/status", method: .get).status == .unauthorized)
                let wrong = try await client.execute(
                    uri: "/v1/accounts/\(account)/status", method: .get, headers: [.authorization: "Bearer nope"])
                #expect(wrong.status == .unauthorized)
                let unknown = try await client.getWithKey("/v1/accounts/\(account)/status")
                #expect(unknown.status == .ok)
                #expect(try unknown.answer(StatusAnswer.self).state == "free_with_credits")
                #expect(try unknown.answer(StatusAnswer.self).hadSubscription == false)
                // Account ids are the app's own: any 1–128 characters; longer ones are refused.
                #expect(try await client.getWithKey("/v1/accounts/not-a-uuid/status").status == .ok)
                #expect(try await client.getWithKey("/v1/accounts/\(String(repeating: "x", count: 129))/status").status == .badRequest)
                #expect(try await client.getWithKey("/v1/subscriptions/123").status == .notFound)
                #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
                let tiers = try await client.execute(uri: "/v1/tiers", method: .get)
                #expect(tiers.status == .ok)
                let paywall = try tiers.answer(TiersAnswer.self)
                #expect(paywall.tiers.map(\.id) == ["basic", "pro", "max"])
                #expect(paywall.free.displayName == "Free")
                #expect(paywall.meters.first?.displayName == "AI requests")
                // Each pack says which store sells it: the same catalogue lists Apple's, Stripe's and Play's.
                let packs = Dictionary(uniqueKeysWithValues: paywall.topUps.map { ($0.id, $0.store) })
                #expect(packs["credits.100"] == "app_store" && packs["price_credits_100"] == "stripe" && packs["credits_100"] == "google_play")
                #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            }
        }
    }
}

@Suite("Intake under concurrency, on real PostgreSQL")
struct ConcurrentIntakeTests {
    @Test("concurrent deliveries share commits: each distinct notification accepted once, every repeat a duplicate")
    func concurrentDeliveries() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let bodies = try (0..<40).map { _ in
                let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
                return try harness.signer.requestBody(for: event)
            }
            // Each notification delivered twice at once, as Apple's retries can overlap a slow answer.
            let deliveries = bodies + bodies
            try await harness.withHTTP { client in
                let statuses = try await withThrowingTaskGroup(of: String.self) { group in
                    for body in deliveries.shuffled() {
                        group.addTask {
                            let response = try await client.postNotification(body)
                            #expect(response.status == .ok)
                            return (try? response.answer(IntakeAnswer.self).status) ?? "?"
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == "accepted" }.count == 40)
                #expect(statuses.filter { $0 == "duplicate" }.count == 40)
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 40)
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 40)
        }
    }
}
