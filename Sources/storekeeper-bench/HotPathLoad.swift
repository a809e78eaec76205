import NIOCore
import NIOHTTP1

/// The open- and closed-loop phases the hot-path benchmarks (`api`, `scale`) drive at `serve`: `connections`
/// clients, `seconds` a phase.
struct HotPathLoad {
    var connections: Int
    var seconds: Int

    /// `rate` requests a second for `seconds`, open loop, over twice `connections` connections (so the client's one
    /// request in flight per connection does not bound the rate), after a second at that rate not counted: the
    /// connections are new, and the phase before (spends) dropped every account's cached status.
    func pace(_ system: SystemUnderTest, rate: Int, _ request: @escaping @Sendable (Int) -> APIBenchmarkCommand.Request) async throws -> APIBenchmarkCommand.Phase {
        let host = "127.0.0.1:\(system.port)"
        return try await HTTPLoadGenerator.send(
            host: "127.0.0.1", ports: system.ports, connections: connections * 2, count: max(rate, 1) * (seconds + 1), rate: max(rate, 1),
            warmUp: .seconds(1)
        ) { index in APIBenchmarkCommand.bytes(request(index), host: host) }
    }

    /// `connections` clients sending `request(i)` back to back for `seconds` (after a second of warm-up: connections
    /// open, caches and plans as in steady use), with ``HTTPLoadGenerator``; a 2xx counts as answered.
    func load(_ system: SystemUnderTest, _ request: @escaping @Sendable (Int) -> APIBenchmarkCommand.Request) async throws -> APIBenchmarkCommand.Phase {
        let host = "127.0.0.1:\(system.port)"
        return try await HTTPLoadGenerator.run(
            host: "127.0.0.1", ports: system.ports, connections: connections, warmUp: .seconds(1), seconds: .seconds(Int64(seconds))
        ) { index in APIBenchmarkCommand.bytes(request(index), host: host) }
    }
}
