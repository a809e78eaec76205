import Logging
import Metrics
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client is too slow: no request head within `headTimeout` of connecting, no complete
/// body within `bodyTimeout` of its head, or no next request within `idleTimeout` of a response. While a request is
/// being answered nothing is timed here (the handlers bound their own work). Closed connections are counted in
/// `storekeeper_http_connections_timed_out_total{waiting_for}`.
///
/// Sits after HTTP decoding, so a head that never completes counts from the connection's start (or the previous
/// response), which is what bounds a client that sends half a head and stalls.
///
/// It also closes the connection after a response that says `Connection: close` (a body refused for the memory
/// budget): Hummingbird would otherwise first read the rest of the refused body, as slowly as its sender likes.
///
/// It closes a connection that pipelines more than ``maximumPipelined`` requests ahead of their answers: every request
/// decoded waits in memory for its turn, and its answer too when the client does not read — 2,048 connections each
/// sending thousands of `GET`s without reading held 1.7 GB. Apple and HTTP client libraries send one request at a time.
///
/// A request's end may arrive after its answer was written (a handler that answers before reading the body, such as
/// `/healthz`): the connection is then already waiting for its next request, and that deadline stays armed — a
/// client that sends its last byte late must not switch every timer off.
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What the connection is waiting for from the client.
    enum Waiting: String {
        case head, body
        case nextRequest = "next_request"
    }

    private let limits: HTTPServerLimits
    private let logger: Logger
    private var deadline: Scheduled<Void>?
    /// The response being written said `Connection: close`.
    private var closesAfterResponse = false
    /// The current request has been answered, whether or not its end has arrived yet.
    private var answered = false
    /// Requests whose head has arrived and whose answer has not been written to its end.
    private var unanswered = 0
    /// Requests a connection may send ahead of their answers.
    static let maximumPipelined = 16

    init(limits: HTTPServerLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(.head, after: limits.headTimeout, context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelActive(context: ChannelHandlerContext) {
        if deadline == nil { arm(.head, after: limits.headTimeout, context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            unanswered += 1
            guard unanswered <= Self.maximumPipelined else {
                Counter(label: "storekeeper_http_connections_closed_total", dimensions: [("reason", "pipelined")]).increment()
                logger.debug("connection closed: too many requests ahead of their answers", metadata: ["requests": "\(unanswered)"])
                disarm()
                context.close(promise: nil)
                return
            }
            answered = false
            arm(.body, after: limits.bodyTimeout, context: context)
        case .body: break
        // Answered already: the next-request deadline armed by the answer's end keeps running.
        case .end: if !answered { disarm() }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            closesAfterResponse = head.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            unanswered = max(0, unanswered - 1)
            if closesAfterResponse {
                disarm()
                context.writeAndFlush(data, promise: promise)
                context.close(promise: nil)
                return
            }
            // The client may have sent its next request before this end came through (the answer's head and body were
            // flushed, and its `Content-Length` told the client it had all of it): that request is then answered under
            // no deadline here, or its body's until its end. An idle deadline armed now closed it mid-answer (the
            // hostile drill's stopped database, about one request in 100).
            if unanswered == 0 {
                answered = true
                arm(.nextRequest, after: limits.idleTimeout, context: context)
            }
            context.write(data, promise: promise)
        }
    }

    private func arm(_ waiting: Waiting, after duration: Duration, context: ChannelHandlerContext) {
        disarm()
        let logger = logger
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) {
            Counter(label: "storekeeper_http_connections_timed_out_total", dimensions: [("waiting_for", waiting.rawValue)])
                .increment()
            logger.debug("connection closed: client too slow", metadata: ["waiting_for": "\(waiting.rawValue)"])
            context.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
