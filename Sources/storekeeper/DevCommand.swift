import ArgumentParser
import AsyncHTTPClient
import Credits
import Foundation
import GooglePlayFake
import Hummingbird
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime
import StripeFake

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Everything in one process for a newcomer: private PostgreSQL, local signing chain, serve and work.",
        discussion: """
            With DATABASE_URL unset, a private PostgreSQL cluster is created and started under ./.storekeeper/. \
            A local Apple-shaped signing chain is generated and trusted, so `storekeeper simulate` can send signed \
            notifications. Other STOREKEEPER_* variables are honoured; sensible development defaults fill the rest.
            """
    )

    @Option(name: .customLong("port"), help: "HTTP port (default: STOREKEEPER_PORT, else 8080).") var portOption: Int?
    @Flag(help: "Also run an in-process fake Stripe (on the next port) that this server reads and that posts its webhooks here.")
    var fakeStripe = false
    @Flag(help: "Also run an in-process fake Google Play (two ports on) that this server reads and that pushes its notifications here.")
    var fakePlay = false

    /// The HTTP port: `--port`, else `STOREKEEPER_PORT` as `serve` reads it, else 8080.
    static func port(option: Int?, environment: [String: String]) throws -> Int {
        if let option {
            guard (1...65_535).contains(option) else { throw CommandFailure("--port must be 1 to 65535, got \(option)") }
            return option
        }
        let text = environment["STOREKEEPER_PORT", default: ""].trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return 8080 }
        guard let port = Int(text), (1...65_535).contains(port) else {
            throw CommandFailure("STOREKEEPER_PORT must be 1 to 65535 for dev, got \"\(text)\"")
        }
        return port
    }

    func run() async throws {
        let port = try Self.port(option: portOption, environment: ProcessInfo.processInfo.environment)
        // Before anything is started: a second `dev` must not get as far as the first's cluster.
        guard PrivateCluster.isFree(port: port) else {
            throw CommandFailure("port \(port) is in use (another `storekeeper dev`?): stop it, or pass --port")
        }
        let fakeStripePort = port + 1
        if fakeStripe, !PrivateCluster.isFree(port: fakeStripePort) {
            throw CommandFailure("port \(fakeStripePort) (the fake Stripe's) is in use: stop what uses it, or pass another --port")
        }
        let fakePlayPort = port + 2
        if fakePlay, !PrivateCluster.isFree(port: fakePlayPort) {
            throw CommandFailure("port \(fakePlayPort) (the fake Google Play's) is in use: stop what uses it, or pass another --port")
        }
        // The catalogue before anything starts: run from another folder, the default `config/tiers.yml` is not there,
        // and that is said at once rather than after a cluster was started and migrated.
        if case .failure(let error) = TierCatalogue.load(environment: ProcessInfo.processInfo.environment) { throw error }
        let dev = DevEnvironment()
        // A second server for this folder would have a clock of its own and take over dev.env, so `simulate` and the
        // operator commands would talk to one and read the other. Only a dev server that knows this folder's key is
        // one: whatever else answers on a port a dev.env left behind names (another project's server) is not.
        let written = dev.settings()
        if let running = written["STOREKEEPER_URL"], let key = written["STOREKEEPER_API_KEY"] {
            var request = HTTPClientRequest(url: running + "/admin/dev/clock")
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            struct Reading: Decodable { var nowMilliseconds: Int64 }
            if let answer = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)), answer.status == .ok,
                let body = try? await answer.body.collect(upTo: 4096), (try? JSONDecoder().decode(Reading.self, from: body)) != nil
            {
                throw CommandFailure("another `storekeeper dev` serves this folder at \(running): use it, or stop it first")
            }
        }
        var environment = ProcessInfo.processInfo.environment
        var cluster: PrivateCluster?
        let databaseURL: DatabaseURL
        if let text = environment["DATABASE_URL"], !text.isEmpty {
            databaseURL = try DatabaseURL(parsing: text)
        } else {
            let privateCluster = try PrivateCluster(directory: dev.clusterDirectory)
            if privateCluster.isRunning {
                // Left running by a `dev` that did not stop it (killed): used, and left running as found.
                say("Using the private PostgreSQL cluster already running in \(dev.clusterDirectory.path)")
            } else {
                say("Starting a private PostgreSQL cluster in \(dev.clusterDirectory.path) …")
                cluster = privateCluster
            }
            databaseURL = try privateCluster.start()
        }
        defer { cluster?.stop() }

        _ = try dev.signingChain()
        let apiKey = try dev.apiKey()
        let localRoot = dev.signingDirectory.appendingPathComponent("root.pem").path
        environment["DATABASE_URL"] = databaseURL.urlString
        environment["STOREKEEPER_BUNDLE_ID", default: "com.example.storekeeper"] += ""
        environment["STOREKEEPER_ENVIRONMENTS", default: "Sandbox"] += ""
        environment["STOREKEEPER_ROOT_CERTIFICATES"] = ([localRoot] + [environment["STOREKEEPER_ROOT_CERTIFICATES"]].compactMap { $0 })
            .joined(separator: ",")
        environment["STOREKEEPER_API_KEYS"] = ([apiKey] + [environment["STOREKEEPER_API_KEYS"]].compactMap { $0 }).joined(separator: ",")
        environment["STOREKEEPER_ADMIN_KEYS"] = DevEnvironment.adminKeys(devKey: apiKey, adding: environment["STOREKEEPER_ADMIN_KEYS"])
        if environment["STOREKEEPER_ERASURE_KEY", default: ""].isEmpty { environment["STOREKEEPER_ERASURE_KEY"] = try dev.erasureKey() }
        environment["STOREKEEPER_PORT"] = String(port)
        environment["STOREKEEPER_LOG_FORMAT", default: "text"] += ""
        let fakeStripeURL = "http://127.0.0.1:\(fakeStripePort)"
        if fakeStripe {
            environment["STOREKEEPER_STRIPE_API_KEY"] = FakeStripe.defaultAPIKey
            environment["STOREKEEPER_STRIPE_BASE_URL"] = fakeStripeURL
            environment["STOREKEEPER_STRIPE_WEBHOOK_SECRETS"] = FakeStripe.defaultWebhookSecret
        }
        let fakePlayURL = "http://127.0.0.1:\(fakePlayPort)"
        // A developer's own purchases are a license tester's: sandbox, as simulate's App Store purchases are.
        let play = try FakeGooglePlay(
            packageName: environment["STOREKEEPER_GOOGLE_PACKAGE_NAME", default: "com.example.storekeeper"], testPurchases: true)
        let pushTarget = FakeGooglePlay.PushTarget(
            url: "http://127.0.0.1:\(port)/notifications/google", audience: "http://127.0.0.1:\(port)/notifications/google",
            serviceAccount: "play-push@fake-play.iam.gserviceaccount.com")
        if fakePlay {
            // The fake's service-account key file, as Play Console would give one: its token_uri is the fake's.
            let keyFile = dev.directory.appendingPathComponent("fake-play-service-account.json")
            try Data(play.serviceAccountKeyFile(tokenURI: fakePlayURL + "/token")).write(to: keyFile)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
            environment["STOREKEEPER_GOOGLE_PACKAGE_NAME"] = play.packageName
            environment["STOREKEEPER_GOOGLE_PUSH_AUDIENCE"] = pushTarget.audience
            environment["STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT"] = pushTarget.serviceAccount
            environment["STOREKEEPER_GOOGLE_CERTS_URL"] = fakePlayURL + "/oauth2/v3/certs"
            environment["STOREKEEPER_GOOGLE_SERVICE_ACCOUNT"] = keyFile.path
            environment["STOREKEEPER_GOOGLE_PLAY_API_URL"] = fakePlayURL
        }

        let configuration = try StorekeeperConfiguration.load(environment: environment)
        bootstrapLogging(format: configuration.logFormat)
        let logger = Logger(label: "storekeeper.dev")
        let devClock = DevClock()
        let components = try StorekeeperComponents(configuration: configuration, devClock: devClock, logger: logger)
        let url = "http://\(configuration.host):\(port)"
        var settings: [String: String] = [:]
        if fakeStripe {
            // The `stripe pay|renew|cancel|refund` commands find the fake here.
            settings = ["STOREKEEPER_STRIPE_BASE_URL": fakeStripeURL, "STOREKEEPER_STRIPE_API_KEY": FakeStripe.defaultAPIKey]
        }
        // The `google buy|renew|…` commands find the fake here; `accounts show` names the package in Play's
        // subscription-centre link.
        if fakePlay {
            settings["STOREKEEPER_GOOGLE_FAKE_URL"] = fakePlayURL
            // Under a key of its own: the server's Play settings go together, and `source .storekeeper/dev.env` must not
            // give a later `serve` half of them.
            settings[devPlayPackageKey] = play.packageName
        }
        try dev.writeSettings(
            settings.merging([
                "STOREKEEPER_URL": url, "STOREKEEPER_API_KEY": apiKey, "STOREKEEPER_BUNDLE_ID": configuration.bundleId,
                "DATABASE_URL": databaseURL.urlString,
                // The operator commands (`grants`, `accounts show`) then read the catalogue the server serves.
                "STOREKEEPER_TIERS": URL(fileURLWithPath: configuration.tiersPath).standardizedFileURL.path,
            ]) { _, new in new })
        let (applied, clockOffset) = try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 2), logger: logger) {
            client in
            try await ensureReachable(client, url: databaseURL, logger: logger)
            let applied = try await withCommandTimeout(.seconds(300)) {
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: logger).migrate()
            }
            return (applied, try await DevClockOffset(client: client, logger: logger).stored())
        }
        if !applied.isEmpty { say("Migrated: \(applied.joined(separator: ", "))") }
        // The facts in this database were dated by the clock `simulate advance` moved: going back to the real time would
        // put them in the future (a renewal not yet due, credits granted ahead), so the clock resumes where it was.
        if clockOffset > 0 {
            let now = devClock.advance(by: Double(clockOffset) / 1000)
            say(
                "The dev clock resumes at \(now.formatted(.iso8601)), \(Self.span(milliseconds: clockOffset)) ahead of the real time (kept in the database)"
            )
        }
        let command = Self.invocation
        // The fake Stripe: served on its port for this process's worker and the `stripe` commands, acting at the dev
        // clock, and delivering what its actions send to this server's intake.
        let fake = FakeStripe(
            prices: FakeStripe.prices(of: configuration.catalogue), webhookURL: "\(url)/stripe/webhooks", clock: { devClock.now() })
        let fakeServer = fakeStripe ? Self.serve(fake, port: fakeStripePort, logger: logger) : nil
        defer { fakeServer?.cancel() }
        let playServer =
            fakePlay
            ? Self.serve(
                play, plans: FakeGooglePlay.plans(of: configuration.catalogue), products: FakeGooglePlay.products(of: configuration.catalogue),
                target: pushTarget, port: fakePlayPort, clock: { devClock.now() },
                logger: logger)
            : nil
        defer { playServer?.cancel() }
        try await StorekeeperProcess.run(components, roles: [.serve, .work]) { boundPort in
            let account = UUID().uuidString.lowercased()
            say(
                """

                Storekeeper is running at http://\(configuration.host):\(boundPort)  (database: \(databaseURL))
                  bundle id:   \(configuration.bundleId) (Sandbox), signing chain in \(dev.signingDirectory.path)
                  API key:     \(apiKey)
                  dashboard:   \(url)/admin  (any user name, the API key as password)

                Send a signed test notification and read the account's status:
                  \(command) simulate subscribe --account \(account)
                  curl -H 'Authorization: Bearer \(apiKey)' \(url)/v1/accounts/\(account)/status

                Other scenarios: renew, cancel, expire, upgrade --to max.monthly, downgrade --to basic.monthly, refund,
                grace, fail, recover; `simulate advance 30d` moves this server's clock a month on.
                Operator commands find this database by themselves here: \(command) jobs stats, \(command) accounts show ID.
                Stop with Ctrl-C.
                """)
            if fakeStripe {
                say(
                    """

                    A fake Stripe runs at \(fakeStripeURL) (docs/stripe.md). A web purchase:
                      curl -X POST -H 'Authorization: Bearer \(apiKey)' -H 'Content-Type: application/json' \\
                        -d '{"productId": "price_pro_monthly", "successUrl": "https://example.com/ok", "cancelUrl": "https://example.com/no"}' \\
                        \(url)/v1/accounts/\(account)/stripe/checkout
                      \(command) stripe pay <the sessionId it answered>
                      curl -H 'Authorization: Bearer \(apiKey)' \(url)/v1/accounts/\(account)/status
                    Then: \(command) stripe renew <sub_…> [--failing], stripe cancel <sub_…> [--now], stripe refund --subscription <sub_…>.
                    """)
            }
            if fakePlay {
                say(
                    """

                    A fake Google Play runs at \(fakePlayURL) (docs/google-play.md). An Android purchase:
                      \(command) google buy --account \(account)
                      curl -H 'Authorization: Bearer \(apiKey)' \(url)/v1/accounts/\(account)/status
                    Then: \(command) google renew|cancel|restore|grace|hold|recover|pause|resume|expire|revoke <purchaseToken>,
                    google upgrade|downgrade <purchaseToken> --to <productId/basePlanId>.
                    """)
            }
        }
    }

    /// `milliseconds` as the largest whole unit or two: "61 days 4 hours", "3 hours 5 minutes", "45 seconds".
    static func span(milliseconds: Int64) -> String {
        let seconds = milliseconds / 1000
        let units: [(Int64, String)] = [(86_400, "day"), (3600, "hour"), (60, "minute"), (1, "second")]
        var parts: [String] = []
        var rest = seconds
        for (size, name) in units where rest >= size && parts.count < 2 {
            let count = rest / size
            parts.append("\(count) \(name)\(count == 1 ? "" : "s")")
            rest -= count * size
        }
        return parts.isEmpty ? "\(milliseconds) milliseconds" : parts.joined(separator: " ")
    }

    /// Serves the fake Stripe on `port` until the task is cancelled.
    static func serve(_ fake: FakeStripe, port: Int, logger: Logger) -> Task<Void, any Error> {
        let application = Application(router: fake.router(), configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        return Task { try await application.runService() }
    }

    /// Serves the fake Google Play, with its control routes, on `port` until the task is cancelled.
    static func serve(
        _ fake: FakeGooglePlay, plans: [String: FakeGooglePlay.Plan], products: Set<String>, target: FakeGooglePlay.PushTarget, port: Int,
        clock: @escaping @Sendable () -> Date, logger: Logger
    ) -> Task<Void, any Error> {
        let router = fake.router()
        fake.addControlRoutes(to: router, plans: plans, products: products, target: target, clock: clock)
        let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        return Task { try await application.runService() }
    }

    /// How this binary was run, as a command that works from the current folder: `.build/debug/storekeeper` when it
    /// lies below it (a bare `storekeeper` is on nobody's PATH unless it was run that way), else its full path.
    static var invocation: String {
        let invoked = CommandLine.arguments[0]
        guard invoked.contains("/") else { return invoked }
        let path = URL(fileURLWithPath: invoked).standardizedFileURL.path
        let folder = FileManager.default.currentDirectoryPath + "/"
        return path.hasPrefix(folder) ? String(path.dropFirst(folder.count)) : path
    }
}
