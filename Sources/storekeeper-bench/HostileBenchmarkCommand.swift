import ArgumentParser
import Foundation
import HostileInput
import LocalSigning
import NIOCore
import StorekeeperRuntime

struct HostileBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hostile",
        abstract: "CPU that serve spends on each costly 512 KiB body shape, against a real notification and /healthz.",
        discussion: """
            Starts serve on a private PostgreSQL cluster and POSTs each shape of `HostileShapes` to the intake — as \
            a 512 KiB body, and as the payload of a JWS signed by an untrusted chain (the largest the intake lets \
            through: 180 KiB before base64) — --rounds times each, one after another. The cost of a shape is the CPU \
            time serve used (user + system, from /proc) divided by the requests sent. In the same run it measures two \
            references the same way: GET /healthz (the server's trivial answer) and an authentic notification \
            accepted and stored (its verification is the bare crypto of the intake). It prints each cost, the worst \
            and the ratios.
            """
    )

    @Option(help: "Requests per shape (CPU time is read in 10-ms ticks: more rounds, finer figures).") var rounds = 50
    @Option(help: "A PostgreSQL server to run on (a fresh database, dropped afterwards) instead of a private cluster.")
    var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard rounds > 0 else { throw ValidationError("--rounds must be positive") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, logger: logger) { url in
            let system = try SystemUnderTest(databaseURL: url, clients: 1, logger: logger)
            do {
                try system.migrate()
                try await system.startServe()
                let report = try await measure(system)
                await system.stop()
                return report
            } catch {
                await system.stop()
                throw error
            }
        }
        report.print(json: json)
    }

    func measure(_ system: SystemUnderTest) async throws -> BenchmarkReport {
        let attacker = NotificationSigner(signer: try JWSSigner(chain: try LocalSigningChain.generate()), bundleId: SystemUnderTest.bundleId)
        let shapes = HostileShapes.all(size: 512 * 1024) + HostileShapes.all(size: 180 * 1024).map(HostileDrill.wrapped(attacker))
        // Warm up every path once.
        for shape in shapes { _ = await system.post(ByteBuffer(bytes: shape.bytes)) }
        _ = await system.request("/healthz")

        let healthz = try await cpuMilliseconds(system, count: rounds * 50) { _ in _ = await system.request("/healthz") }
        let notifications = try (0..<(rounds * 10)).map { try system.subscribe($0, at: Date()).body }
        let authentic = try await cpuMilliseconds(system, count: notifications.count) { index in
            _ = await system.post(notifications[index])
        }
        var costs: [(String, Double)] = []
        for shape in shapes {
            let body = ByteBuffer(bytes: shape.bytes)
            costs.append((shape.name, try await cpuMilliseconds(system, count: rounds) { _ in _ = await system.post(body) }))
        }
        let worst = costs.max { $0.1 < $1.1 }!
        var report = BenchmarkReport()
        report.lines = ["hostile: serve's CPU per request, \(rounds) requests per shape (ms)"]
        for (name, cost) in costs {
            report.lines.append("  " + name.padding(toLength: 62, withPad: " ", startingAt: 0) + String(format: "%7.2f", cost))
        }
        report.lines += [
            "  reference, GET /healthz:                                        " + String(format: "%7.3f", healthz),
            "  reference, an authentic notification verified and stored:       " + String(format: "%7.3f", authentic),
            "  worst shape: \(worst.0), \(String(format: "%.2f", worst.1)) ms — "
                + String(format: "×%.1f an authentic notification, ×%.0f /healthz", worst.1 / authentic, worst.1 / healthz),
        ]
        report.fields = [
            ("worstShape", .text(worst.0)), ("worstShapeCpuMs", .number(worst.1)), ("authenticCpuMs", .number(authentic)),
            ("healthzCpuMs", .number(healthz)), ("worstToAuthentic", .number(worst.1 / authentic)),
            ("worstToHealthz", .number(worst.1 / healthz)),
        ]
        return report
    }

    /// serve's CPU time per call of `body`, in milliseconds, over `count` calls.
    func cpuMilliseconds(_ system: SystemUnderTest, count: Int, _ body: (Int) async throws -> Void) async throws -> Double {
        guard let before = system.serve?.cpuSeconds else { throw CommandFailure("cannot read serve's CPU time from /proc") }
        for index in 0..<count { try await body(index) }
        guard let after = system.serve?.cpuSeconds else { throw CommandFailure("cannot read serve's CPU time from /proc") }
        return (after - before) * 1000 / Double(count)
    }
}
