import ArgumentParser
import Foundation
import GooglePlayFake
import Hummingbird
import Logging
import NIOCore
import StorekeeperRuntime

/// `storekeeper-bench play`: Google Play's notifications end to end — pushes POSTed to `serve` as Pub/Sub sends them,
/// processed by `work`, which reads every token from a fake Play beside it and derives its subscription — against
/// pgbench TPC-B of the same cluster.
struct PlayBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play notifications pushed to `serve` + `work` processes that read a fake Play, until every one is processed.",
        discussion: """
            Starts a fake Google in this process (push-token keys, token endpoint, subscriptionsv2) and `storekeeper serve` \
            and `work` as processes on a private PostgreSQL; --subscriptions customers buy a subscription (one \
            notification each), pushed with a signed OIDC token from --clients connections as fast as answered \
            (intake/s, latency); waits until all are processed (notifications/s, each with its Play read and \
            derivation); then renews every subscription and pushes those notifications open-loop at --rate per second \
            (latency at that rate). The reference is pgbench TPC-B on the same cluster at scale --clients.
            """)

    @OptionGroup var options: StoreIntakeOptions

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: nil, coldWAL: false, logger: logger) { url in
            try await PlayBenchmarkRun(options: options, databaseURL: url, logger: logger).run()
        }
        report.print(json: options.json)
    }
}

/// One run: fake Google and processes up, purchases, burst, drain, renewals at a steady rate, processes down.
struct PlayBenchmarkRun {
    static let package = "com.example.bench"
    static let audience = "https://bench.example/notifications/google"
    static let pushAccount = "play-push@bench.iam.gserviceaccount.com"

    let options: StoreIntakeOptions
    let databaseURL: DatabaseURL
    let logger: Logger

    func run() async throws -> BenchmarkReport {
        let fake = try FakeGooglePlay(packageName: Self.package)
        let fakePort = try PrivateCluster.freePort()
        let base = "http://127.0.0.1:\(fakePort)"
        // Its own shutdown, cancelled with the run, is no finding.
        var fakeLogger = Logger(label: "fake-google")
        fakeLogger.logLevel = .critical
        let application = Application(
            router: fake.router(), configuration: .init(address: .hostname("127.0.0.1", port: fakePort)), logger: fakeLogger)
        let fakeServer = Task { try await application.runService() }
        defer { fakeServer.cancel() }
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-bench-play-\(UUID().uuidString).json")
        try Data(fake.serviceAccountKeyFile(tokenURI: base + "/token")).write(to: keyFile)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let system = try SystemUnderTest(
            databaseURL: databaseURL, clients: options.clients,
            environment: [
                "STOREKEEPER_GOOGLE_PACKAGE_NAME": Self.package, "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": Self.audience,
                "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": Self.pushAccount, "STOREKEEPER_GOOGLE_CERTS_URL": base + "/oauth2/v3/certs",
                "STOREKEEPER_GOOGLE_SERVICE_ACCOUNT": keyFile.path, "STOREKEEPER_GOOGLE_PLAY_API_URL": base,
                // Storekeeper's own limit measured, not Google's quota.
                "STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE": "1000000",
            ], logger: logger)
        try system.migrate()
        let plan = FakeGooglePlay.Plan(productId: "pro", basePlanId: "monthly")
        let now = Date()
        let purchases = (0..<options.subscriptions).map { index in fake.buy(plan, accountToken: "bench-\(index)", at: now) }
        let token = try fake.pushToken(.init(audience: Self.audience, email: Self.pushAccount))
        let burstBodies = purchases.map { fake.pushBody($0.notification).body }
        do {
            try await system.startServe()
            try system.startWorker()
            let started = Date()
            let burst = try await system.send(requests: requests(burstBodies, token: token, port: system.port), clients: options.clients, rate: nil)
            let processed = try await waitUntilProcessed(
                burstBodies.count, in: .googleNotifications, since: started, databaseURL: databaseURL, logger: logger)
            var renewalBodies: [[UInt8]] = []
            for purchase in purchases { renewalBodies.append(fake.pushBody(try fake.renew(purchase.token, at: now)).body) }
            let steady = try await system.send(
                requests: requests(renewalBodies, token: token, port: system.port), clients: options.clients, rate: options.rate)
            _ = try await waitUntilProcessed(
                burstBodies.count + renewalBodies.count, in: .googleNotifications, since: started, databaseURL: databaseURL, logger: logger)
            let reads = fake.apiRequests
            let memory = system.peakResidentBytes
            await system.stop()
            let tpcb = try BenchmarkDatabase.pgbench([], clients: options.clients, seconds: 5, url: databaseURL)
            return StoreIntakeMeasurement(
                benchmark: "play",
                headline:
                    "play: \(burst.sent) purchase notifications from \(options.clients) clients to serve + work, a fake Google Play beside them (private cluster, WAL warmed)",
                unit: "notifications", reads: "Play API reads", options: options, burst: burst, processed: processed, steady: steady,
                readsPerMessage: Double(reads) / Double(burstBodies.count + renewalBodies.count), tpcb: tpcb.tps,
                residentBytes: memory.serve + memory.work
            ).report
        } catch {
            await system.stop()
            throw error
        }
    }

    /// Each push as Pub/Sub sends it, with its OIDC token (one token serves the run: it is valid an hour).
    func requests(_ bodies: [[UInt8]], token: String, port: Int) -> [ByteBuffer] {
        bodies.map { body in
            var request = ByteBuffer()
            request.writeString(
                "POST /notifications/google HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                    + "Authorization: Bearer \(token)\r\nContent-Length: \(body.count)\r\n\r\n")
            request.writeBytes(body)
            return request
        }
    }
}
