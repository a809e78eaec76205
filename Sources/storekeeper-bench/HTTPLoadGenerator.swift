import NIOCore
import NIOPosix

/// An HTTP/1.1 load generator in the manner of `wrk`: keep-alive connections on one event loop, each sending its next
/// request as soon as the answer to the previous one is complete (or, paced, when it is due). Requests are bytes
/// written as they are and answers are only framed (status line, `Content-Length` or chunked), so the generator takes
/// a small share of the cores it shares with the server it measures — an HTTP client with a pool, tasks and header
/// objects per request took about half of them.
enum HTTPLoadGenerator {
    /// Runs `connections` connections, spread over `host`'s `ports` (one per `serve` process), for `warmUp` (not counted) and then `seconds`; `request(i)` is
    /// the i-th request's bytes, a whole HTTP/1.1 request. An answer with a 2xx status counts as answered, with its
    /// latency; any other answer or a connection error as failed.
    static func run(
        host: String, ports: [Int], connections: Int, warmUp: TimeAmount, seconds: TimeAmount,
        request: @escaping @Sendable (Int) -> ByteBuffer
    ) async throws -> LoadPhase {
        let begin = NIODeadline.now() + warmUp
        let end = begin + seconds
        var total = try await load(host: host, ports: ports, connections: connections, begin: begin, end: end, schedule: nil) { request($0) }
        total.seconds = Double(seconds.nanoseconds) / 1e9
        return total
    }

    /// Sends `request(0) ..< request(count)` once each over `connections` connections: back to back, or — with a
    /// `rate` — request i at i / rate seconds after the start, open loop, as requests arrive from outside: a connection
    /// still waiting for its previous answer sends late, and that request's latency counts from when it was due, so
    /// a stall shows in the latencies instead of hiding in fewer requests (coordinated omission).
    /// Every request not answered with a 2xx counts as failed.
    /// With a `rate`, the requests due in the first `warmUp` are sent but not counted (new connections, caches
    /// filling after the phase before).
    /// `isReference(connection)`: that connection's requests are the phase's reference, sent at the same time on their
    /// own connections (their latencies go to ``LoadPhase/reference``, not to the phase's own).
    static func send(
        host: String, ports: [Int], connections: Int, count: Int, rate: Int?, warmUp: TimeAmount = .zero,
        isReference: @escaping @Sendable (Int) -> Bool = { _ in false }, request: @escaping @Sendable (Int) -> ByteBuffer
    ) async throws -> LoadPhase {
        let start = NIODeadline.now()
        let schedule = rate.map { rate in { @Sendable (index: Int) in start + .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate)) } }
        let uncounted = rate.map { min(count, Int(Int64($0) * warmUp.nanoseconds / 1_000_000_000)) } ?? 0
        var total = try await load(
            host: host, ports: ports, connections: min(connections, count), begin: start + (rate == nil ? .zero : warmUp), end: .distantFuture,
            schedule: schedule, isReference: isReference
        ) { index in index < count ? request(index) : nil }
        total.seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
        total.failed = max(count - uncounted - total.answered - total.reference.count, 0)
        return total
    }

    /// The connections of one load, each sending requests `first, first + connections, …` until `request` has no more
    /// or `end` has passed; answers to requests sent before `begin` are not counted. A connection whose answer takes
    /// longer than ``answerTimeout`` is closed (that request failed): a server that stops answering ends the load.
    private static func load(
        host: String, ports: [Int], connections: Int, begin: NIODeadline, end: NIODeadline,
        schedule: (@Sendable (Int) -> NIODeadline)?, isReference: @Sendable (Int) -> Bool = { _ in false },
        request: @escaping @Sendable (Int) -> ByteBuffer?
    ) async throws -> LoadPhase {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        var total = LoadPhase()
        do {
            var finished: [EventLoopFuture<LoadPhase>] = []
            for connection in 0..<connections {
                let handler = LoadConnection(
                    first: connection, stride: connections, begin: begin, end: end, schedule: schedule, request: request)
                let channel = try await ClientBootstrap(group: loop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                    }
                    .connect(host: host, port: ports[connection % ports.count]).get()
                finished.append(channel.closeFuture.map { handler.phase }.recover { _ in handler.phase })
            }
            for (connection, future) in finished.enumerated() {
                let phase = try await future.get()
                total.failed += phase.failed
                if isReference(connection) {
                    total.reference += phase.latencies
                } else {
                    total.answered += phase.answered
                    total.latencies += phase.latencies
                }
            }
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()
        return total
    }

    /// How long a connection waits for an answer before it gives up (closes, the request failed).
    static let answerTimeout = TimeAmount.seconds(30)
}

/// One connection of ``HTTPLoadGenerator``: sends a request, frames its answer, records it, sends the next; closes at
/// the end of the load. Everything happens on the connection's event loop.
private final class LoadConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var index: Int
    private let stride: Int
    private let begin: NIODeadline
    private let end: NIODeadline
    private let schedule: (@Sendable (Int) -> NIODeadline)?
    private let request: @Sendable (Int) -> ByteBuffer?
    /// What this connection measured; read once it has closed.
    private(set) var phase = LoadPhase()
    private var pending = ByteBuffer()
    /// When the request in flight was sent — or, paced, when it was due: its latency counts from then.
    private var sentAt = NIODeadline.now()
    private var dueAt: NIODeadline?
    private var answerDeadline: Scheduled<Void>?

    init(
        first: Int, stride: Int, begin: NIODeadline, end: NIODeadline, schedule: (@Sendable (Int) -> NIODeadline)?,
        request: @escaping @Sendable (Int) -> ByteBuffer?
    ) {
        self.index = first
        self.stride = stride
        self.begin = begin
        self.end = end
        self.schedule = schedule
        self.request = request
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        guard let status = Self.completeAnswer(in: &pending) else { return }
        answerDeadline?.cancel()
        let now = NIODeadline.now()
        if sentAt >= begin {
            if (200..<300).contains(status) {
                phase.answered += 1
                phase.latencies.append(Double((now - sentAt).nanoseconds) / 1_000_000)
            } else {
                phase.failed += 1
            }
        }
        guard now < end else {
            context.close(promise: nil)
            return
        }
        send(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answerDeadline?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        phase.failed += 1
        context.close(promise: nil)
    }

    private func send(context: ChannelHandlerContext) {
        guard let bytes = request(index) else {
            context.close(promise: nil)
            return
        }
        let due = schedule?(index)
        dueAt = due
        index += stride
        if let due, due > .now() {
            context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { self.write(bytes, context: context) }
        } else {
            write(bytes, context: context)
        }
    }

    private func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        sentAt = dueAt.map { min($0, .now()) } ?? .now()
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        answerDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: HTTPLoadGenerator.answerTimeout) {
            self.phase.failed += 1
            context.close(promise: nil)
        }
    }

    /// The status of the answer at the start of `buffer` once all of it has arrived (then removed from `buffer`), or
    /// nil while it is incomplete. One request is outstanding at a time, so `buffer` never holds more than one answer.
    /// Read as bytes, without a string per header: the generator's own CPU is what it must keep small.
    static func completeAnswer(in buffer: inout ByteBuffer) -> Int? {
        let view = buffer.readableBytesView
        guard let headEnd = view.firstRange(of: Self.emptyLine) else { return nil }
        let head = view[view.startIndex..<headEnd.lowerBound]
        // "HTTP/1.1 200 OK": three digits after the first space.
        var status = 0
        if let space = head.firstIndex(of: UInt8(ascii: " ")), head.distance(from: space, to: head.endIndex) > 3 {
            for digit in head[(space + 1)..<(space + 4)] { status = status * 10 + Int(digit) - 48 }
        }
        var length = 0
        var chunked = false
        var lineStart = head.startIndex
        while lineStart < head.endIndex {
            let lineEnd = head[lineStart...].firstRange(of: Self.newline)?.lowerBound ?? head.endIndex
            let line = head[lineStart..<lineEnd]
            if Self.hasName(line, Self.contentLength) {
                length = line.dropFirst(Self.contentLength.count).reduce(0) { (48...57).contains($1) ? $0 * 10 + Int($1) - 48 : $0 }
            } else if Self.hasName(line, Self.transferEncoding) {
                chunked = true  // the only coding a server sends on its own
            }
            lineStart = min(lineEnd + 2, head.endIndex)
        }
        let end: Int
        if chunked {
            // The last chunk: "0" on a line of its own, then the empty line that ends the (absent) trailers.
            let body = view[headEnd.upperBound...]
            if body.starts(with: Self.lastChunk) {
                end = headEnd.upperBound + Self.lastChunk.count
            } else if let found = body.firstRange(of: Self.newline + Self.lastChunk) {
                end = found.upperBound
            } else {
                return nil
            }
        } else {
            end = headEnd.upperBound + length
            guard end <= view.endIndex else { return nil }
        }
        buffer.moveReaderIndex(forwardBy: end - view.startIndex)
        buffer.discardReadBytes()
        return status
    }

    private static let newline: [UInt8] = [13, 10]
    private static let emptyLine: [UInt8] = [13, 10, 13, 10]
    private static let lastChunk = Array("0\r\n\r\n".utf8)
    private static let contentLength = Array("content-length:".utf8)
    private static let transferEncoding = Array("transfer-encoding:".utf8)

    /// Whether `line` starts with the header name `name` (lowercase, with its colon), in any case.
    private static func hasName(_ line: ByteBufferView.SubSequence, _ name: [UInt8]) -> Bool {
        line.count >= name.count && zip(line, name).allSatisfy { ($0 | 0x20) == $1 }
    }
}
