import NIOCore
import NIOHTTP1

/// Says in HTTP/1.1's terms what an HTTP/1.0 request asks of its connection, before the request is handed on as HTTP
/// types, which carry no version (``ConnectionDeadlineHandler`` puts this handler there).
///
/// A request that does not keep its connection — HTTP/1.0 without `Connection: keep-alive`, or HTTP/1.1 with
/// `Connection: close` in any spelling — is handed on with exactly `Connection: close`, which Hummingbird's channel
/// honours: it answers, takes no further request, and closes its output once the answer is written. The answer says
/// `Connection: close`. Before, an HTTP/1.0 request was answered as if it kept the connection, and a client that reads
/// to the end (`nc`, a load balancer's plain health check) waited for the idle deadline, 75 s, holding a connection.
/// An HTTP/1.0 request that keeps its connection is answered with `Connection: keep-alive`, without which an HTTP/1.0
/// client takes the connection as closing.
final class RequestedCloseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What each request not yet answered asked of its connection, in the order they came.
    private enum Asked { case close, keepAliveHTTP10, keepAlive }
    private var asked: CircularBuffer<Asked> = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        guard head.isKeepAlive else {
            asked.append(.close)
            head.headers.replaceOrAdd(name: "connection", value: "close")
            return context.fireChannelRead(wrapInboundOut(.head(head)))
        }
        asked.append(head.version.major == 1 && head.version.minor == 0 ? .keepAliveHTTP10 : .keepAlive)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // An interim answer (1xx) is not the request's answer.
        guard case .head(var head) = unwrapOutboundIn(data), head.status.code >= 200, let request = asked.popFirst() else {
            return context.write(data, promise: promise)
        }
        switch request {
        case .close: head.headers.replaceOrAdd(name: "connection", value: "close")
        // Unless the answer closes the connection itself (a refused body, the pipelining limit).
        case .keepAliveHTTP10 where !head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }:
            head.headers.replaceOrAdd(name: "connection", value: "keep-alive")
        case .keepAliveHTTP10: return context.write(data, promise: promise)
        case .keepAlive: return context.write(data, promise: promise)
        }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
