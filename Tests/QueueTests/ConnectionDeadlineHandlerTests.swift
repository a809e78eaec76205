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
    static let limits = HTTPServerLimits(headTimeout: .seconds(3), bodyTimeout: .seconds(4), idleTimeout: .seconds(5))

    static func connection() throws -> EmbeddedChannel {
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
}
