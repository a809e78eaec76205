import Foundation
import Logging
import PostgresNIO
import StorekeeperRuntime

/// Where a benchmark runs: a fresh database on `--database-url`'s server (dropped afterwards), or — without one — a
/// private throwaway cluster with default (durable) settings, removed afterwards.
enum BenchmarkDatabase {
    static func with<Result: Sendable>(
        url text: String?, logger: Logger, _ body: (DatabaseURL) async throws -> Result
    ) async throws -> Result {
        if let text {
            let server = try DatabaseURL(parsing: text)
            let name = "storekeeper_bench_\(UInt32.random(in: 0...UInt32.max))"
            _ = try await PostgresClient.withRunning(server.clientConfiguration(maximumConnections: 1), logger: logger) {
                try await $0.query("CREATE DATABASE \(unescaped: name)", logger: logger)
            }
            var url = server
            url.database = name
            let drop = {
                try? await PostgresClient.withRunning(server.clientConfiguration(maximumConnections: 1), logger: logger) {
                    try await $0.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
                }
            }
            do {
                let result = try await body(url)
                await drop()
                return result
            } catch {
                await drop()
                throw error
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-bench-\(UUID().uuidString)")
        let cluster = try PrivateCluster(directory: directory)
        let url = try cluster.start()
        defer {
            cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        return try await body(url)
    }

    /// Runs a PostgreSQL client program (pgbench, psql) against `url`; returns its standard output.
    static func runTool(_ name: String, _ arguments: [String], url: DatabaseURL) throws -> String {
        guard let bin = PrivateCluster.findBinDirectory() else { throw CommandFailure("\(name) not found (install postgresql)") }
        var environment: [String: String] = [:]
        if let password = url.password { environment["PGPASSWORD"] = password }
        let result = try ChildProcess.run(
            bin.appendingPathComponent(name).path,
            ["-h", url.host, "-p", String(url.port), "-U", url.username] + arguments + [url.database], environment: environment)
        let text = result.output
        guard result.status == 0 else {
            throw CommandFailure("\(name) failed: \(text.split(separator: "\n").last.map(String.init) ?? "")")
        }
        return text
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
