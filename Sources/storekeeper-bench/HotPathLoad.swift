import NIOCore
import NIOHTTP1

/// The open- and closed-loop phases the hot-path benchmarks (`api`, `scale`) drive at `serve`: `connections`
/// clients, `seconds` a phase.
struct HotPathLoad {
    var connections: Int
    var seconds: Int
    /// The second before each phase's counted seconds: its requests are sent, not counted (new connections).
    static let warmUpSeconds: Int64 = 1

    /// `rate` requests a second for `seconds`, open loop, over twice `connections` connections (so the client's one
    /// request in flight per connection does not bound the rate), after a second at that rate not counted: the
    /// connections are new, and the phase before (spends) dropped every account's cached status.
    ///
    /// With a `reference` (`/healthz`), every eighth connection sends it instead, at the same pace, so the phase
    /// carries its own reference measured at the same moments (``LoadPhase/reference``); the total rate is raised so
    /// the phase's own requests still come at `rate`.
    func pace(
        _ system: SystemUnderTest, rate: Int, reference: LoadRequest? = nil, _ request: @escaping @Sendable (Int) -> LoadRequest
    ) async throws -> LoadPhase {
        let host = "127.0.0.1:\(system.port)"
        let connections = self.connections * 2
        let isReference: @Sendable (Int) -> Bool = { connection in reference != nil && connection % 8 == 0 }
        let total = totalRate(rate, withReference: reference != nil)
        return try await HTTPLoadGenerator.send(
            host: "127.0.0.1", ports: system.ports, connections: connections, count: total * (seconds + 1), rate: total,
            warmUp: .seconds(Self.warmUpSeconds), isReference: isReference
        ) { index in
            // Request i goes out on connection i % connections (``HTTPLoadGenerator``).
            if let reference, isReference(index % connections) { return reference.bytes(host: host) }
            return request(index).bytes(host: host)
        }
    }

    /// The phase's own requests ``pace(_:rate:reference:_:)`` sends at `rate`, its warm-up second's included (the
    /// reference requests beside them left out): what a count over the whole phase is divided by.
    func requestsSent(rate: Int) -> Int { max(rate, 1) * (seconds + 1) }

    /// The indices ``pace(_:rate:reference:_:)`` at `rate` passes to its request, reference slots included (a phase
    /// reading `accounts[index % accounts.count]` reads each once when it has this many).
    func requestIndices(rate: Int, withReference: Bool) -> Int { totalRate(rate, withReference: withReference) * (seconds + 1) }

    /// The rate ``pace(_:rate:reference:_:)`` sends at over all its connections: `rate` for its own requests, raised
    /// by the reference's share (every eighth connection) when it has one.
    private func totalRate(_ rate: Int, withReference: Bool) -> Int {
        let all = connections * 2
        let own = withReference ? all - (all + 7) / 8 : all
        return max(rate, 1) * all / max(own, 1)
    }

    /// `connections` clients sending `request(i)` back to back for `seconds` (after a second of warm-up: connections
    /// open, caches and plans as in steady use), with ``HTTPLoadGenerator``; a 2xx counts as answered.
    func load(_ system: SystemUnderTest, _ request: @escaping @Sendable (Int) -> LoadRequest) async throws -> LoadPhase {
        let host = "127.0.0.1:\(system.port)"
        return try await HTTPLoadGenerator.run(
            host: "127.0.0.1", ports: system.ports, connections: connections, warmUp: .seconds(Self.warmUpSeconds), seconds: .seconds(Int64(seconds))
        ) { index in request(index).bytes(host: host) }
    }
}
