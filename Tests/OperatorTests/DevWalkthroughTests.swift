import Foundation
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The README's walkthrough, as a newcomer runs it: `storekeeper dev` and `storekeeper simulate` as processes in a
/// folder of their own, a month passing on the dev clock. At each step the status shows what docs/credits.md promises
/// with config/tiers.yml — figures written from the documentation, not read from the code.
@Suite("The README's walkthrough with the dev clock")
struct DevWalkthroughTests {
    struct Credits: Equatable, CustomStringConvertible {
        var state: String
        var tier: String
        var remaining: Int?
        var cycle: Int?
        var topUp: Int?

        var description: String {
            "\(state) \(tier) remaining \(remaining.map(String.init) ?? "nil") cycle \(cycle.map(String.init) ?? "nil") topUp \(topUp.map(String.init) ?? "nil")"
        }
    }

    /// A server on the port given that answers 200 to every GET, as another project's server might.
    static let answersEverything = """
        import http.server, sys
        class Any(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Any).serve_forever()
        """

    @Test("subscribe, ten days, upgrade, renew at the period's end, refund: the promised credits at every step")
    func walkthrough() async throws {
        try await TestDatabase.withMigratedDatabase { url in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sk-walk-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let port = try PrivateCluster.freePort()
            let environment = [
                "DATABASE_URL": url.urlString, "STOREKEEPER_TIERS": AppleSamples.repository.appendingPathComponent("config/tiers.yml").path,
                "STOREKEEPER_SQL_DIR": AppleSamples.repository.appendingPathComponent("sql").path,
            ]
            // The port as `serve` reads it, from the environment (`--port` is the other way).
            let dev = try TestProcess(
                "storekeeper", arguments: ["dev"], environment: environment.merging(["STOREKEEPER_PORT": String(port)]) { $1 }, directory: folder)
            defer { dev.signal(SIGTERM) }
            let settings = DevEnvironment(directory: folder.appendingPathComponent(".storekeeper"))
            try await eventually(timeout: .seconds(60), "dev to start") {
                dev.text.contains("Storekeeper is running") && settings.settings()["STOREKEEPER_API_KEY"] != nil
            }
            #expect(settings.settings()["STOREKEEPER_URL"] == "http://127.0.0.1:\(port)", "\(dev.text)")
            let key = try #require(settings.settings()["STOREKEEPER_API_KEY"])
            let account = UUID().uuidString.lowercased()

            @discardableResult
            func simulate(_ arguments: String...) async throws -> String {
                let (status, output) = try await TestProcess.run(
                    "storekeeper", ["simulate"] + arguments, environment: environment, directory: folder)
                #expect(status == 0, "simulate \(arguments.joined(separator: " ")): \(output)")
                return output
            }
            func credits() async throws -> Credits {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/accounts/\(account)/status")!)
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                let (data, _) = try await URLSession.shared.data(for: request)
                let status = try decode(StatusAnswer.self, data)
                let meter = status.credits["ai_requests"]
                return Credits(
                    state: status.state, tier: status.tier ?? "?", remaining: meter?.remaining.map(Int.init),
                    cycle: meter?.cycle.map(Int.init), topUp: meter.map { Int($0.topUp) })
            }
            // Read once, at once: `simulate` returns when the worker has applied what it sent (and `advance` when
            // what fell due has run), as the README promises a newcomer pasting the steps as one block.
            func expect(_ wanted: Credits, after step: String) async throws {
                let read = try await credits()
                #expect(read == wanted, "after \(step)")
            }
            func devNow() async throws -> Date {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/admin/dev/clock")!)
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                let (data, _) = try await URLSession.shared.data(for: request)
                let reading = try decode(DevClockAnswer.self, data)
                return Date(timeIntervalSince1970: Double(reading.nowMilliseconds) / 1000)
            }

            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "UTC")!
            func monthDays(from date: Date) throws -> Double {
                try #require(utc.date(byAdding: .month, value: 1, to: date)).timeIntervalSince(date) / 86_400
            }
            // Start where a month is not 30 days, so the test tells Apple's calendar month from a 30-day one.
            let start = try await devNow()
            let skip = try #require((0..<40).first { try monthDays(from: start.addingTimeInterval(Double($0) * 86_400)) != 30 })
            if skip > 0 { try await simulate("advance", "\(skip)d") }
            let subscribedAt = try await devNow()
            let subscribed = try await simulate("subscribe", "--account", account)
            #expect(subscribed.contains("status: pro, state subscribed; ai_requests remaining 1000"), "\(subscribed)")
            try await expect(Credits(state: "subscribed", tier: "pro", remaining: 1000, cycle: 1000, topUp: 0), after: "subscribe")
            try await simulate("advance", "10d")
            try await expect(Credits(state: "subscribed", tier: "pro", remaining: 1000, cycle: 1000, topUp: 0), after: "ten days")
            // Apple bills a month as a calendar month: Pro's period is 28 to 31 days from the day it was bought, so Max
            // for the days left of it is floor(3000 × (19.99 − 9.99 × left/days) / 19.99) — 2000 in a 30-day month
            // (20 of 30 left), 1984 in a 31-day one; Pro's unused 1000 become top-ups.
            let days = try monthDays(from: subscribedAt)
            let prorated = Int((3000 * (19.99 - 9.99 * (days - 10) / days) / 19.99).rounded(.down))
            try await simulate("upgrade", "--account", account, "--to", "max.monthly")
            try await expect(Credits(state: "subscribed", tier: "max", remaining: 1000 + prorated, cycle: prorated, topUp: 1000), after: "upgrade")
            // The clock moves to the period's end first: a renewal grants Max's full 3000, no carry-over of the cycle.
            try await simulate("renew", "--account", account)
            try await expect(Credits(state: "subscribed", tier: "max", remaining: 4000, cycle: 3000, topUp: 1000), after: "renew")
            // The customer asks Apple to refund the renewed period, none of its 3000 used: a full refund — shown, never
            // sent (dev has no App Store Server API); the request changes no credit.
            let requested = try await simulate("refund-request", "--account", account)
            #expect(requested.contains("CONSUMPTION_REQUEST about subscription") && requested.contains(": not_configured, answer at"), "\(requested)")
            #expect(
                requested.contains(
                    "Storekeeper would answer DELIVERED · GRANT_FULL — the policy's, 0.0 % used; not sent: the store's API is not configured, no consent"
                ),
                "\(requested)")
            try await expect(Credits(state: "subscribed", tier: "max", remaining: 4000, cycle: 3000, topUp: 1000), after: "a refund request")
            // The renewed period refunded: its credits go; the top-ups (bought with the upgraded period) stay, and the
            // free tier's 5 a day come back.
            let refunded = try await simulate("refund", "--account", account)
            let refundUUID = try #require(
                refunded.firstMatch(of: #/"notificationUUID" ?: ?"([0-9a-fA-F-]{36})"/#).map { String($0.1) }, "\(refunded)")
            try await expect(Credits(state: "free_with_credits", tier: "free", remaining: 1005, cycle: nil, topUp: 1000), after: "refund")
            // A refund request after the refund: Apple signs the subscription as it stands (refunded), so it changes
            // nothing — signing it afresh as active would give the period back.
            try await simulate("refund-request", "--account", account)
            try await expect(
                Credits(state: "free_with_credits", tier: "free", remaining: 1005, cycle: nil, topUp: 1000), after: "a late refund request")

            // The README's holds: 50 held (today's 5, then 45 of the top-up), settled for 30 by its key, 20 back; a
            // hold nobody settles is given back at its expiry by a job on the dev clock.
            let held = try await simulate("hold", "--account", account, "--meter", "ai_requests", "--amount", "50", "--key", "gen-1")
            #expect(held.contains("held 50 ai_requests") && held.contains("955 left to spend"), "\(held)")
            try await expect(Credits(state: "free_with_credits", tier: "free", remaining: 955, cycle: nil, topUp: 955), after: "a hold of 50")
            let settled = try await simulate("settle", "--account", account, "--key", "gen-1", "--amount", "30")
            #expect(settled.contains("settled hold") && settled.contains("charged 30, returned 20"), "\(settled)")
            try await expect(Credits(state: "free_with_credits", tier: "free", remaining: 975, cycle: nil, topUp: 975), after: "settled for 30")
            let again = try await TestProcess.run(
                "storekeeper", ["simulate", "release", "--account", account, "--key", "gen-1"], environment: environment, directory: folder)
            #expect(again.0 != 0 && again.1.contains("409") && again.1.contains("hold_ended"), "a settled hold cannot be released: \(again.1)")
            let unsettled = try await simulate(
                "hold", "--account", account, "--meter", "ai_requests", "--amount", "100", "--key", "gen-2", "--expires-in", "600")
            #expect(unsettled.contains("held 100 ai_requests"), "\(unsettled)")
            try await simulate("advance", "11m")
            // The top-up only: eleven minutes may cross midnight on the dev clock, and bring a new day's 5.
            #expect(try await credits().topUp == 975, "the expired hold came back before `advance` returned")

            // A lifetime unlock through `simulate buy`, and a grant from the CLI in the dev folder on the dev clock:
            // advancing past the grant's end ends it, and its job — run at the dev clock's instant — says so.
            let buyer = UUID().uuidString.lowercased()
            let lifetime = try await simulate("buy", "--product", "basic.lifetime", "--account", buyer)
            func status(of id: String) async throws -> StatusAnswer {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/accounts/\(id)/status")!)
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                return try decode(StatusAnswer.self, try await URLSession.shared.data(for: request).0)
            }
            let bought = try await status(of: buyer)
            #expect(bought.tier == "basic" && bought.entitlements.first?.source == "lifetime")
            // A credit pack through `simulate buy`: its 100 reach the buyer's top-ups.
            let pack = try await simulate("buy", "--product", "credits.100", "--account", buyer)
            #expect(try await status(of: buyer).credits["ai_requests"]?.topUp == 100)
            // The customer asks Apple for the pack's money back after using 30 of it (Basic's 200 a month go first).
            // dev has no Apple to answer, but shows what Storekeeper would: 30 % used, at most the policy's half, a
            // prorated refund — never sent, the App Store Server API not being configured.
            var spend = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/accounts/\(buyer)/usage")!)
            spend.httpMethod = "POST"
            spend.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            spend.setValue("application/json", forHTTPHeaderField: "Content-Type")
            spend.httpBody = Data(#"{"meter": "ai_requests", "amount": 230, "idempotencyKey": "walkthrough-pack"}"#.utf8)
            #expect((try await URLSession.shared.data(for: spend).1 as? HTTPURLResponse)?.statusCode == 200)
            let packTransaction = try #require(pack.firstMatch(of: #/transaction (\d+)/#).map { String($0.1) }, "\(pack)")
            let asked = try await simulate("refund-request", "--transaction", packTransaction)
            #expect(asked.contains("transaction \(packTransaction): not_configured"), "\(asked)")
            #expect(
                asked.contains(
                    "Storekeeper would answer DELIVERED · GRANT_PRORATED · 30.0 % — the policy's; not sent: the store's API is not configured, no consent"
                ),
                "\(asked)")
            // Apple signs what the pack cost (the catalogue's 1990 milliunits): the dev server's revenue counts it.
            var revenue = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/admin/analytics/revenue?product=credits.100&environment=sandbox")!)
            revenue.setValue("Basic " + Data("dev:\(key)".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
            struct Chart: Decodable {
                struct Series: Decodable {
                    struct Point: Decodable { var value: Double? }
                    var name: String
                    var points: [Point]
                }
                var series: [Series]
            }
            let chart = try decode(Chart.self, try await URLSession.shared.data(for: revenue).0)
            let gross = chart.series.filter { $0.name == "gross" }.flatMap(\.points).compactMap(\.value).reduce(0, +)
            #expect(gross == 1990, "\(chart.series.map { ($0.name, $0.points.compactMap(\.value).reduce(0, +)) })")
            let devDatabase = environment.merging(["DATABASE_URL": ""]) { $1 }
            let (granted, grantText) = try await TestProcess.run(
                "storekeeper", ["grants", "add", buyer, "--tier", "max", "--duration", "P1D", "--reason", "walkthrough"], environment: devDatabase,
                directory: folder)
            #expect(granted == 0, "\(grantText)")
            // Written by another process: `dev` hears of it by the database's NOTIFY, which drops its cached status
            // (within 2 seconds, docs/operations.md "Several processes"; under the whole suite's load, not at once).
            try await eventually(timeout: .seconds(10), "the grant's NOTIFY to reach dev") { try await status(of: buyer).tier == "max" }
            try await simulate("advance", "2d")
            #expect(try await status(of: buyer).tier == "basic")
            // The grant's end ran before `advance` returned; `events list --type` shows it and nothing else.
            let (listed, events) = try await TestProcess.run(
                "storekeeper", ["events", "list", "--account", buyer, "--type", "grant.*"], environment: devDatabase, directory: folder)
            #expect(
                listed == 0 && events.contains("grant.ended") && events.contains("grant.started") && !events.contains("entitlement."), "\(events)")
            let (mistyped, mistypedText) = try await TestProcess.run(
                "storekeeper", ["events", "list", "--type", "grant.endd"], environment: devDatabase, directory: folder)
            #expect(mistyped != 0 && mistypedText.contains("unknown event type \"grant.endd\""), "\(mistypedText)")
            let (jobs, jobsText) = try await TestProcess.run("storekeeper", ["jobs", "stats"], environment: ["DATABASE_URL": ""], directory: folder)
            #expect(jobs == 0 && jobsText.contains("apply-notification"), "\(jobsText)")
            // A second dev in the same folder: one line naming the port, and the first keeps serving.
            let (second, secondText) = try await TestProcess.run(
                "storekeeper", ["dev", "--port", String(port)], environment: environment, directory: folder)
            #expect(second == 1 && secondText.contains("port \(port) is in use"), "\(secondText)")
            // The holds left 975 in the top-up; two days on, today's 5 are whole.
            try await expect(Credits(state: "free_with_credits", tier: "free", remaining: 980, cycle: nil, topUp: 975), after: "a second dev")
            let (other, otherText) = try await TestProcess.run(
                "storekeeper", ["dev", "--port", String(try PrivateCluster.freePort())], environment: environment, directory: folder)
            #expect(other == 1 && otherText.contains("another `storekeeper dev` serves this folder at http://127.0.0.1:\(port)"), "\(otherText)")
            // Run from a folder without `config/tiers.yml`: one line naming it, before any cluster is started there.
            let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("sk-elsewhere-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            let (noCatalogue, noCatalogueText) = try await TestProcess.run(
                "storekeeper", ["dev", "--port", String(try PrivateCluster.freePort())],
                environment: environment.merging(["DATABASE_URL": "", "STOREKEEPER_TIERS": ""]) { $1 }, directory: elsewhere)
            #expect(
                noCatalogue == 1 && noCatalogueText.contains("STOREKEEPER_TIERS (config/tiers.yml): cannot read the file")
                    && noCatalogueText.split(separator: "\n").count == 1, "\(noCatalogueText)")
            #expect(!FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent(".storekeeper").path), "a cluster was started")

            // What Apple could not send is refused, in one line.
            func refused(_ arguments: String...) async throws -> String {
                let (status, output) = try await TestProcess.run(
                    "storekeeper", ["simulate"] + arguments, environment: environment, directory: folder)
                #expect(status != 0, "simulate \(arguments.joined(separator: " ")) was accepted: \(output)")
                return output
            }
            let unknown = try await refused("renew", "--account", UUID().uuidString)
            #expect(unknown.contains("`simulate subscribe` it first"), "\(unknown)")
            let product = try await refused("upgrade", "--account", account, "--to", "nope.monthly")
            #expect(product.contains("not an App Store subscription product"), "\(product)")
            // Stripe's and Play's products are sold on the web and on Android, not by Apple.
            for other in ["price_credits_100", "price_basic_lifetime", "credits_100", "basic_lifetime"] {
                let web = try await refused("buy", "--product", other, "--account", account)
                #expect(web.contains("not an App Store lifetime, non-renewing or credit pack product") && web.contains("credits.100"), "\(web)")
            }
            let stripeMonthly = try await refused("subscribe", "--account", UUID().uuidString, "--product", "price_basic_monthly")
            #expect(stripeMonthly.contains("price_basic_monthly is not an App Store subscription product"), "\(stripeMonthly)")
            let playMonthly = try await refused("upgrade", "--account", account, "--to", "pro/monthly")
            #expect(playMonthly.contains("pro/monthly is not an App Store subscription product"), "\(playMonthly)")
            // Another account's subscription is refused before anything is signed.
            let subscriptionId = try #require(subscribed.firstMatch(of: #/for subscription (\d+)/#).map { String($0.1) }, "\(subscribed)")
            let someoneElses = try await refused(
                "refund-request", "--account", UUID().uuidString, "--original-transaction-id", subscriptionId)
            #expect(someoneElses.contains("was bought by account \(account) here, not by"), "\(someoneElses)")
            let unsold = try await refused("refund-request", "--transaction", "123")
            #expect(unsold.contains("transaction 123 was not sold by `simulate buy` in this folder"), "\(unsold)")
            let unlock = try #require(lifetime.firstMatch(of: #/transaction (\d+)/#).map { String($0.1) }, "\(lifetime)")
            let notPack = try await refused("refund-request", "--transaction", unlock)
            #expect(notPack.contains("is basic.lifetime, not a credit pack"), "\(notPack)")
            let far = try await refused("advance", "4000d")
            #expect(far.contains("at most 10 years"), "\(far)")
            let misspelt = try await refused("renew", "--acount", account)
            #expect(misspelt.contains("Unknown option '--acount'. Did you mean '--account'?"), "\(misspelt)")
            // `verify --stored` in the dev folder: the dev chain's root, its bundle id and its clock (the refund was
            // signed weeks ahead of the real time), nothing given by hand.
            let (verified, verifiedText) = try await TestProcess.run(
                "storekeeper", ["verify", "--stored", refundUUID], environment: devDatabase, directory: folder)
            #expect(verified == 0 && verifiedText.contains("verified: notification REFUND"), "\(verifiedText.suffix(600))")
            // `accounts show` in the dev folder answers on the dev clock, as the API does.
            let (shown, shownText) = try await TestProcess.run(
                "storekeeper", ["accounts", "show", account, "--json"], environment: environment.merging(["DATABASE_URL": ""]) { $1 },
                directory: folder)
            #expect(shown == 0 && shownText.contains("\"remaining\" : 980"), "\(shownText.prefix(600))")
            // The stores' notifications and the events sent to the app are two lists, each counted as its command counts.
            // Jobs the clock's moves made due (a window's reset) may still be recording events between the two
            // commands on a busy machine: they must agree once the worker has caught up.
            try await eventually(timeout: .seconds(30), "`events list` and `accounts show` to count the same events") {
                let (_, sentList) = try await TestProcess.run(
                    "storekeeper", ["events", "list", "--account", account, "--limit", "1000"], environment: devDatabase, directory: folder)
                let sent = sentList.split(separator: "\n").filter { $0.contains(account) }.count
                let (_, again) = try await TestProcess.run(
                    "storekeeper", ["accounts", "show", account, "--json"], environment: environment.merging(["DATABASE_URL": ""]) { $1 },
                    directory: folder)
                return sent > 0 && again.contains("\"sentEvents\" : \(sent)")
            }

            // A downgrade changes nothing now; the renewal brings the lower product and its allowance (Apple renews into
            // the pending product): Basic's 200.
            let downgrader = UUID().uuidString.lowercased()
            try await simulate("subscribe", "--account", downgrader)
            try await simulate("downgrade", "--account", downgrader, "--to", "basic.monthly")
            let pending = try await status(of: downgrader)
            #expect(pending.tier == "pro" && pending.credits["ai_requests"]?.remaining == 1000, "before the renewal")
            let renewed = try await simulate("renew", "--account", downgrader)
            #expect(renewed.contains("status: basic") && renewed.contains("remaining 200"), "\(renewed)")
            #expect(try await status(of: downgrader).subscription?.productId == "basic.monthly")
            // What Apple would not sign is refused: a second SUBSCRIBED while a period is in force, a "downgrade" to a
            // higher level, an "upgrade" to a lower one, a move of the clock by nothing.
            let twice = try await refused("subscribe", "--account", downgrader)
            #expect(twice.contains("is in force until") && twice.split(separator: "\n").count == 1, "\(twice)")
            let upward = try await refused("downgrade", "--account", downgrader, "--to", "max.monthly")
            #expect(upward.contains("max.monthly is a higher level than basic.monthly"), "\(upward)")
            let downward = try await refused("upgrade", "--account", account, "--to", "basic.monthly")
            #expect(downward.contains("basic.monthly is a lower level than max.monthly"), "\(downward)")
            let nothing = try await refused("advance", "0d")
            #expect(nothing.contains("more than 0"), "\(nothing)")
            // Past the idempotency window (30 days) on the dev clock, a key is a new spend: `advance` runs the window's
            // job at once, as the hour it skipped would have.
            func spendOne(_ account: String, idempotencyKey: String) async throws -> Int? {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/accounts/\(account)/usage")!)
                request.httpMethod = "POST"
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(#"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(idempotencyKey)"}"#.utf8)
                let (data, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
                return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["remaining"] as? Int
            }
            let spent = try await spendOne(downgrader, idempotencyKey: "walkthrough-window")
            #expect(spent == 199)
            try await simulate("advance", "31d")
            let spentAgain = try await spendOne(downgrader, idempotencyKey: "walkthrough-window")
            let left = try await status(of: downgrader).credits["ai_requests"]?.remaining.map(Int.init)
            #expect(
                spentAgain != spent && spentAgain == left,
                "the key again after 31 days: \(String(describing: spentAgain)), \(String(describing: left)) left")
            // P1M is a calendar month from the dev clock's date, as Apple bills (28 to 31 days), not 30 days: from a
            // date whose month is not 30 days.
            let unlike = try await devNow()
            let toUnlike = try #require((0..<40).first { try monthDays(from: unlike.addingTimeInterval(Double($0) * 86_400)) != 30 })
            if toUnlike > 0 { try await simulate("advance", "\(toUnlike)d") }
            let monthFrom = try await devNow()
            try await simulate("advance", "P1M")
            let moved = try await devNow().timeIntervalSince(monthFrom) / 86_400
            #expect(abs(moved - (try monthDays(from: monthFrom))) < 0.01, "P1M moved \(moved) days from \(monthFrom)")
            // After a billing failure Apple's EXPIRED says why — BILLING_RETRY, expirationIntent 2 — and so does the
            // subscription's end reason; a customer's own end is VOLUNTARY.
            let failing = UUID().uuidString.lowercased()
            try await simulate("subscribe", "--account", failing)
            try await simulate("grace", "--account", failing)
            let gaveUp = try await simulate("expire", "--account", failing)
            #expect(gaveUp.contains("EXPIRED/BILLING_RETRY"), "\(gaveUp)")
            let (_, failingShown) = try await TestProcess.run(
                "storekeeper", ["accounts", "show", failing, "--json"], environment: environment, directory: folder)
            #expect(failingShown.contains(#""endReason" : "EXPIRED_BILLING_RETRY""#), "\(failingShown)")
            let leaving = UUID().uuidString.lowercased()
            try await simulate("subscribe", "--account", leaving)
            #expect(try await simulate("expire", "--account", leaving).contains("EXPIRED/VOLUNTARY"))

            // Restarted, `dev` resumes its clock where the database kept it: the facts it dated stay in its past.
            let before = try await devNow()
            dev.signal(SIGTERM)
            _ = await dev.waitForExit()
            let restartedPort = try PrivateCluster.freePort()
            let restarted = try TestProcess(
                "storekeeper", arguments: ["dev", "--port", String(restartedPort)], environment: environment, directory: folder)
            defer { restarted.signal(SIGTERM) }
            try await eventually(timeout: .seconds(60), "dev to start again") { restarted.text.contains("Storekeeper is running") }
            #expect(restarted.text.contains("The dev clock resumes at"), "\(restarted.text.prefix(800))")
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(restartedPort)/admin/dev/clock")!)
            request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            let reading = try decode(DevClockAnswer.self, try await URLSession.shared.data(for: request).0)
            let resumed = Date(timeIntervalSince1970: Double(reading.nowMilliseconds) / 1000)
            #expect(resumed >= before && resumed > Date().addingTimeInterval(39 * 86_400), "resumed at \(resumed), was \(before)")

            // dev.env left behind names a port something else now answers on: that is not this folder's dev server.
            restarted.signal(SIGTERM)
            _ = await restarted.waitForExit()
            let stranger = try TestProcess(
                "/usr/bin/python3", arguments: ["-c", Self.answersEverything, String(restartedPort)], environment: [:], directory: folder)
            defer { stranger.signal(SIGTERM) }
            try await eventually(timeout: .seconds(20), "the stranger to answer") { !PrivateCluster.isFree(port: restartedPort) }
            let third = try TestProcess(
                "storekeeper", arguments: ["dev", "--port", String(try PrivateCluster.freePort())], environment: environment, directory: folder)
            defer { third.signal(SIGTERM) }
            do {
                try await eventually(timeout: .seconds(60), "dev to start beside a stranger on the old port") {
                    third.text.contains("Storekeeper is running")
                }
            } catch {
                Issue.record("\(error): \(third.text.suffix(1500))")
            }
        }
    }
}
