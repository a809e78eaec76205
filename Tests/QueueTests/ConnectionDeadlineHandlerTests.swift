import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import HTTPAPI

/// The per-connection deadlines in the order a keep-alive client really produces: an answer's end can reach the
/// handler after the client, which had the answer's head and its whole `Content-Length` body, sent its next request.
@Suite("Connection deadlines")
struct ConnectionDeadlineHandlerTests {
    static let limits = HTTPServerLimits(headTimeout: .seconds(3), bodyTimeout: .seconds(4), idleTimeout: .seconds(5), writeTimeout: .seconds(2))

    static func connection(limits: HTTPServerLimits = limits) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: ConnectionDeadlineHandler(limits: limits, logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    static func request(_ channel: EmbeddedChannel, _ path: String) throws {
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "a", path: path)))
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    static func answerHeadAndBody(_ channel: EmbeddedChannel) throws {
        var head = HTTPResponse(status: .ok)
        head.headerFields[.contentLength] = "2"
        try channel.writeOutbound(HTTPResponsePart.head(head))
        try channel.writeOutbound(HTTPResponsePart.body(ByteBuffer(string: "{}")))
    }

    @Test(
        "a request sent before the previous answer's end came through is not closed at the idle deadline",
        arguments: [false, true])
    func nextRequestBeforePreviousEnd(endsAfterPreviousAnswer: Bool) throws {
        let channel = try Self.connection()
        try Self.request(channel, "/first")
        try Self.answerHeadAndBody(channel)
        // The client has the whole answer and sends its next request; only then does the first answer's end pass,
        // before or after the second request's own end.
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "a", path: "/second")))
        if !endsAfterPreviousAnswer { try channel.writeInbound(HTTPRequestPart.end(nil)) }
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        if endsAfterPreviousAnswer { try channel.writeInbound(HTTPRequestPart.end(nil)) }
        // The second request takes longer than the idle and body deadlines to answer (a database deadline as long).
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        #expect(channel.isActive, "closed while its request was being answered")
        try Self.answerHeadAndBody(channel)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        // Answered: now the connection waits for a next request under the idle deadline, and is closed at it.
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive, "an idle connection was kept past its deadline")
    }

    @Test("a pipelined request whose body is still coming keeps its body deadline past the previous answer's end")
    func bodyDeadlineSurvivesPreviousEnd() throws {
        let channel = try Self.connection()
        try Self.request(channel, "/first")
        try Self.answerHeadAndBody(channel)
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "a", path: "/second")))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        // The second body never ends: closed at its body deadline (4 s), not left to the idle one (5 s).
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_100))
        #expect(!channel.isActive, "a stalled body outlived its deadline")
    }

    @Test("an answer written before its request's end leaves the idle deadline running")
    func answerBeforeEnd() throws {
        let channel = try Self.connection()
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "a", path: "/healthz")))
        try Self.answerHeadAndBody(channel)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        // Past the body deadline (4 s), short of the idle one (5 s): the idle deadline is the one running.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4_500))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(600))
        #expect(!channel.isActive, "a late request end switched the idle deadline off")
    }

    /// The handler keeps one timer and leaves it where it is while the deadline moves later; a deadline that comes
    /// before it (a head's body deadline after an answer's idle one) must move it earlier, or a stalled body would be
    /// given the idle deadline's time.
    @Test("a body deadline shorter than the idle deadline it follows is kept, not left to the idle one's timer")
    func bodyDeadlineBeforeIdleTimer() throws {
        let limits = HTTPServerLimits(headTimeout: .seconds(3), bodyTimeout: .seconds(4), idleTimeout: .seconds(10), writeTimeout: .seconds(2))
        let channel = try Self.connection(limits: limits)
        try Self.request(channel, "/first")
        try Self.answerHeadAndBody(channel)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        // The head deadline's timer (3 s) runs, finds the idle deadline (10 s) and waits for it.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(3_500))
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "a", path: "/second")))
        // The body never ends: closed at 3.5 + 4 s, not at the idle timer's 10 s.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(3_900))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "a stalled body was given the idle deadline")
    }

    @Test("a connection closed at a deadline, for pipelining or after a closing answer keeps no timer")
    func closedConnectionsKeepNoTimer() throws {
        func connection() throws -> (EmbeddedChannel, ConnectionDeadlineHandler) {
            let handler = ConnectionDeadlineHandler(limits: Self.limits, logger: Logger(label: "test"))
            let channel = EmbeddedChannel(handler: handler)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            #expect(handler.isTimerScheduled)
            return (channel, handler)
        }
        let (stalled, stalledHandler) = try connection()
        try stalled.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "a", path: "/usage")))
        stalled.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!stalled.isActive)
        #expect(!stalledHandler.isTimerScheduled)

        // One request past the limit: it is dropped, the 16 taken are answered, and the last answer closes.
        let (pipelined, pipelinedHandler) = try connection()
        let limit = ConnectionDeadlineHandler.maximumPipelined
        for _ in 0...limit {
            try pipelined.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "a", path: "/healthz")))
            try pipelined.writeInbound(HTTPRequestPart.end(nil))
        }
        var passed = 0
        while try pipelined.readInbound(as: HTTPRequestPart.self) != nil { passed += 1 }
        #expect(passed == 2 * limit, "the heads and ends of the first 16, none of the 17th")
        for answer in 1...limit {
            #expect(pipelined.isActive, "closed before answer \(answer)")
            try pipelined.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try pipelined.writeOutbound(HTTPResponsePart.end(nil))
            pipelined.embeddedEventLoop.run()
        }
        #expect(!pipelined.isActive)
        #expect(!pipelinedHandler.isTimerScheduled)
        var heads: [HTTPResponse] = []
        while let part = try pipelined.readOutbound(as: HTTPResponsePart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        #expect(heads.count == limit)
        #expect(heads.last?.headerFields[.connection] == "close" && heads.dropLast().allSatisfy { $0.headerFields[.connection] == nil })

        let (closing, closingHandler) = try connection()
        try Self.request(closing, "/usage")
        var head = HTTPResponse(status: .contentTooLarge)
        head.headerFields[.connection] = "close"
        try closing.writeOutbound(HTTPResponsePart.head(head))
        try closing.writeOutbound(HTTPResponsePart.end(nil))
        closing.embeddedEventLoop.run()
        #expect(!closing.isActive)
        #expect(!closingHandler.isTimerScheduled)
    }

    static func setWritable(_ channel: EmbeddedChannel, _ writable: Bool) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    /// What the test says NIO holds for the connection, and how often the event reached the handler behind it.
    final class Output: ChannelInboundHandler {
        typealias InboundIn = HTTPRequestPart
        var buffered = 0
        var writabilityChanges = 0
        func channelWritabilityChanged(context: ChannelHandlerContext) { writabilityChanges += 1 }
    }

    static func answering(_ path: String) throws -> (EmbeddedChannel, Output) {
        let output = Output()
        let handler = ConnectionDeadlineHandler(limits: limits, logger: Logger(label: "test")) { _ in output.buffered }
        let channel = EmbeddedChannel(handlers: [handler, output])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try request(channel, path)
        var head = HTTPResponse(status: .ok)
        head.headerFields[.contentLength] = "436139"
        try channel.writeOutbound(HTTPResponsePart.head(head))
        return (channel, output)
    }

    /// The client reads ``ConnectionDeadlineHandler/minimumProgress`` in each 2-s deadline, `deadlines` times over.
    static func readAtTheFloor(_ channel: EmbeddedChannel, _ output: Output, deadlines: Int) {
        for _ in 0..<deadlines {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_000))
            output.buffered -= ConnectionDeadlineHandler.minimumProgress
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_000))
        }
    }

    @Test("a client that stops reading is closed at the write deadline; the event still reaches the handlers behind")
    func clientStopsReading() throws {
        let (channel, output) = try Self.answering("/openapi.json")
        output.buffered = 400_000
        Self.setWritable(channel, false)
        #expect(output.writabilityChanges == 1, "the writability change was not passed on: the writer would wait for ever")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_900))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "a client that stopped reading kept its connection")
    }

    @Test("a client that reads slowly keeps its connection for as long as an answer takes; below the floor it is closed")
    func slowReader() throws {
        let (channel, output) = try Self.answering("/openapi.json")
        output.buffered = 400_000
        Self.setWritable(channel, false)
        // Reading at the floor for longer than any other deadline: kept, though the buffer never drains below its
        // low-water mark.
        Self.readAtTheFloor(channel, output, deadlines: 8)
        #expect(channel.isActive, "closed a client that was still reading")
        // Drained below the low-water mark and filled again: the deadline starts over from there.
        Self.setWritable(channel, true)
        output.buffered = 400_000
        Self.setWritable(channel, false)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_900))
        #expect(channel.isActive)
        // A byte short of the floor in the next 2 s: closed.
        output.buffered -= ConnectionDeadlineHandler.minimumProgress - 1
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "a client reading below the floor kept its connection")
    }

    @Test("the idle deadline waits while an answer it followed is still being read, and runs whole from its end")
    func idleWaitsForReading() throws {
        let (channel, output) = try Self.answering("/openapi.json")
        try channel.writeOutbound(HTTPResponsePart.body(ByteBuffer(string: "{}")))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        output.buffered = 400_000
        Self.setWritable(channel, false)
        // The client reads at the floor for longer than the idle deadline (5 s): not closed as idle.
        Self.readAtTheFloor(channel, output, deadlines: 4)
        #expect(channel.isActive, "closed as idle while the client was reading its answer")
        // Read to the end: idle from now, for the whole idle deadline, and closed at its end.
        Self.setWritable(channel, true)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4_900))
        #expect(channel.isActive, "the idle deadline counted from before the client had read its answer")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "an idle connection was kept past its deadline")
    }
}
