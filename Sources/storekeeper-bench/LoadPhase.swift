import NIOCore
import NIOHTTP1

/// What one phase of ``HTTPLoadGenerator`` measured: answers (2xx) with their latencies in milliseconds, failures,
/// and the phase's length.
struct LoadPhase {
    var answered = 0
    var failed = 0
    var seconds = 0.0
    var latencies: [Double] = []
    /// The latencies of the reference requests sent beside the phase's own, at the same time (`/healthz`), if any.
    var reference: [Double] = []
    /// What it cost `serve` and PostgreSQL in CPU, where measured (``PhaseCPU``).
    var cpu: PhaseCPU?

    var rate: Double { Double(answered) / max(seconds, 0.001) }

    /// The latency under which a share `p` of the answers came (nearest rank).
    func percentile(_ p: Double) -> Double { Self.percentile(p, of: latencies) }

    /// The same for the reference requests.
    func referencePercentile(_ p: Double) -> Double { Self.percentile(p, of: reference) }

    static func percentile(_ p: Double, of latencies: [Double]) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}

/// One request of a load, before it is written as bytes (``bytes(host:)``).
struct LoadRequest: Sendable {
    var path: String
    var method: HTTPMethod
    var headers: [(String, String)] = []
    var body: ByteBuffer?

    /// The whole HTTP/1.1 request, as the load generator writes it.
    func bytes(host: String) -> ByteBuffer {
        var head = "\(method.rawValue) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.readableBytes)\r\n" }
        var bytes = ByteBuffer(string: head + "\r\n")
        if var body { bytes.writeBuffer(&body) }
        return bytes
    }
}
