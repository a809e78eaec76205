import NIOCore
import NIOHTTP1

/// Closes a connection after the answer to a request that asked for it — HTTP/1.0 without `Connection: keep-alive`, or
/// HTTP/1.1 with `Connection: close` — and says so in the answer (`Connection: close`).
///
/// Hummingbird's HTTP/1 channel hands requests on as HTTP types, which carry no version, so an HTTP/1.0 request was
/// answered as if it kept the connection: a client that reads to the end (`nc`, a load balancer's plain health check)
/// waited for the idle deadline, 75 s, holding a connection all that time. This handler sits before that conversion,
/// where the version is known (``ConnectionDeadlineHandler`` puts it there).
final class RequestedCloseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Whether each request not yet answered keeps the connection, in the order they came.
    private var keepsConnection: CircularBuffer<Bool> = []
    /// The answer being written is to a request that did not keep the connection.
    private var closesAfterAnswer = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { keepsConnection.append(head.isKeepAlive) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        // An interim answer (1xx) is not the request's answer.
        case .head(var head) where head.status.code >= 200:
            guard keepsConnection.popFirst() == false else { break }
            head.headers.replaceOrAdd(name: "connection", value: "close")
            closesAfterAnswer = true
            return context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where closesAfterAnswer:
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        case .head, .body, .end:
            break
        }
        context.write(data, promise: promise)
    }
}
