import Logging
import Metrics
import NIOCore
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

#if canImport(Glibc)
    import Glibc
#endif

/// Closes a connection whose client is too slow: no request head within `headTimeout` of connecting, no complete
/// body within `bodyTimeout` of its head, no next request within `idleTimeout` of a response, or an answer it does not
/// read (`writeTimeout`, below). While a request is being answered the request deadlines are off (the handlers bound
/// their own work). Closed connections are counted in `storekeeper_http_connections_timed_out_total{waiting_for}`.
///
/// Sits after HTTP decoding, so a head that never completes counts from the connection's start (or the previous
/// response), which is what bounds a client that sends half a head and stalls.
///
/// It also closes the connection after a response that says `Connection: close` (a body refused for the memory
/// budget): Hummingbird would otherwise first read the rest of the refused body, as slowly as its sender likes.
/// No request after such an answer is taken, and those taken before it are answered first.
///
/// A close here is gentle: once the last answer has been written to the socket, the output is closed (the client
/// reads every answer up to the end), what the client still sends is read and dropped, and the connection is closed
/// when the client closes its side or after ``lingering``. A close with unread input makes the kernel answer with a
/// reset, which may discard answers not yet acknowledged, and a close before the last write finished dropped what NIO
/// still held of it.
///
/// It closes a connection that pipelines more than ``maximumPipelined`` requests ahead of their answers: every request
/// decoded waits in memory for its turn, and its answer too when the client does not read — 2,048 connections each
/// sending thousands of `GET`s without reading held 1.7 GB. Apple and HTTP client libraries send one request at a time.
/// The requests taken before it are answered first, and the connection closed after the last of their answers: a spend
/// among them may have committed, and its client must hear so. What comes after is not handled.
///
/// It closes a connection whose client stops reading: while the connection cannot take more output (the kernel holding
/// ``unsentKernelBytes`` not yet sent, which it is told to hold at most, and NIO more than its high-water mark, so
/// Hummingbird's writer waits), NIO's buffer must shrink by ``minimumProgress`` every `writeTimeout` — the client must
/// read — or the connection is closed. A client that reads, however slowly above that floor, keeps it. The request
/// deadlines do not cover this: answers pipelined behind those the buffers took are never written to their end, so the
/// idle deadline is never armed (15 copies of `/openapi.json`, no key needed, held a connection for as long as the
/// client's kernel acknowledged window probes; a thousand such clients filled `maximumConnections`). For the same
/// reason an idle deadline that comes while the connection cannot take output waits for it instead of closing (the
/// client is still reading an answer, and this deadline times that), and starts over once the output has drained.
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
        /// The client to read what the server has written (`writeTimeout`).
        case read
    }

    private let limits: HTTPServerLimits
    private let logger: Logger
    /// What the connection waits for from the client, until when, and for how long it was armed.
    private var deadline: (waiting: Waiting, at: NIODeadline, duration: Duration)?
    /// The timer that ends ``deadline``: it runs at ``timerAt``, at or before the deadline, and when it finds the
    /// deadline later (it was armed again meanwhile) it runs again at it. Each request arms the body deadline at its
    /// head, clears it at its end and arms the idle one at its answer's end; cancelling and scheduling a NIO timer each
    /// time (a heap insertion and a removal with a search) was about 5 % of `serve`'s CPU a cached status read. Now a
    /// keep-alive connection's timer is scheduled again about once a body timeout: when a head's body deadline comes
    /// before the idle one the timer was left at.
    private var timer: Scheduled<Void>?
    private var timerAt = NIODeadline.distantFuture
    /// Runs while the connection cannot take more output; independent of ``deadline``, which times the client's
    /// requests.
    private var readDeadline: Scheduled<Void>?
    /// The response being written said `Connection: close`.
    private var closesAfterResponse = false
    /// The current request has been answered, whether or not its end has arrived yet.
    private var answered = false
    /// Requests whose head has arrived and whose answer has not been written to its end.
    private var unanswered = 0
    /// No further request is taken — more than ``maximumPipelined`` came ahead of their answers, or a request or an
    /// answer said `Connection: close` — and the connection closes after the answers of those taken.
    private var takesNoMore = false
    /// A request came after that: it and whatever follows are read (so the close finds no unread input) and dropped.
    private var dropping = false
    /// Ends the connection once its output is closed, if the client has not closed its side by then.
    private var lingerTimer: Scheduled<Void>?
    /// How long a connection whose output is closed reads and drops what its client still sends.
    static let lingering = TimeAmount.seconds(2)
    /// What NIO holds for the connection when ``readDeadline`` was armed or last found progress.
    private var bufferedAtLastProgress = 0
    /// Requests a connection may send ahead of their answers.
    static let maximumPipelined = 16
    /// How far NIO's buffer must shrink in each `writeTimeout` while output waits for the client (NIO's default
    /// low-water mark). The kernel passes bytes on in steps of up to half of ``unsentKernelBytes`` (it reports the socket
    /// writable once less than that is unsent), so a client reading 64 KiB in that time always gets past it: about 2 KiB
    /// a second with the default 30 s, far below any real link.
    static let minimumProgress = 32 * 1024
    /// `TCP_NOTSENT_LOWAT`: bytes the kernel holds for a connection beyond what is on its way to the client.
    static let unsentKernelBytes = 64 * 1024

    /// What NIO holds for a connection, not yet taken by the kernel (`nil` when it cannot say).
    private let bufferedBytes: (Channel) -> Int?

    init(
        limits: HTTPServerLimits, logger: Logger,
        bufferedBytes: @escaping (Channel) -> Int? = { try? $0.syncOptions?.getOption(.bufferedWritableBytes) }
    ) {
        self.limits = limits
        self.logger = logger
        self.bufferedBytes = bufferedBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The kernel takes an answer's bytes only while it holds less than this much not yet sent; the rest waits in
        // NIO, where the connection's writability and the read deadline see it. Without it Linux grows a socket's
        // send buffer to megabytes (3.8 MB on loopback), which took whole answers from a client that read none, so the
        // deadline never ran and each such client held that much kernel memory.
        #if canImport(Glibc)
            try? context.channel.syncOptions?.setOption(
                .tcpOption(NIOBSDSocket.Option(rawValue: Int32(TCP_NOTSENT_LOWAT))), value: Self.unsentKernelBytes)
        #endif
        if context.channel.isActive { arm(.head, after: limits.headTimeout, context: context) }
        // Before the conversion to HTTP types, where a request's version is still known (RequestedCloseHandler).
        // Hummingbird adds this handler after it; a pipeline without it (a unit test's) has no version to read.
        if let conversion = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self) {
            try? context.pipeline.syncOperations.addHandler(RequestedCloseHandler(), position: .before(conversion.handler))
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        disarmRead()
        lingerTimer?.cancel()
    }

    func channelActive(context: ChannelHandlerContext) {
        if deadline == nil { arm(.head, after: limits.headTimeout, context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        disarmRead()
        lingerTimer?.cancel()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            disarmRead()
            // The client has read what it was answered: it is idle from now, not from when the answer's end was
            // handed to NIO, which may have been most of the idle deadline ago.
            if answered && unanswered == 0 { arm(.nextRequest, after: limits.idleTimeout, context: context) }
        } else if readDeadline == nil {
            armRead(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Times the client's reading from now: at `writeTimeout` it is closed unless it read ``minimumProgress`` bytes
    /// meanwhile (then the next `writeTimeout` starts) or the connection takes output again.
    private func armRead(context: ChannelHandlerContext) {
        bufferedAtLastProgress = bufferedBytes(context.channel) ?? 0
        readDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(limits.writeTimeout)) {
            self.readDeadline = nil
            guard !context.channel.isWritable else { return }
            if let buffered = self.bufferedBytes(context.channel), buffered <= self.bufferedAtLastProgress - Self.minimumProgress {
                self.armRead(context: context)
            } else {
                self.close(.read, context: context)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !dropping else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard !takesNoMore, unanswered < Self.maximumPipelined else {
                if !takesNoMore {
                    Counter(label: "storekeeper_http_connections_closed_total", dimensions: [("reason", "pipelined")]).increment()
                    logger.debug("connection closing: too many requests ahead of their answers", metadata: ["requests": "\(unanswered + 1)"])
                }
                (takesNoMore, dropping) = (true, true)
                // The requests taken are being answered (each bounds its own work; the read deadline times the client).
                disarm()
                return
            }
            // Hummingbird takes no request after one that asks to close (RequestedCloseHandler spells HTTP/1.0's so).
            if head.headerFields[.connection]?.lowercased() == "close" { takesNoMore = true }
            unanswered += 1
            answered = false
            arm(.body, after: limits.bodyTimeout, context: context)
        case .body: break
        // Answered already: the next-request deadline armed by the answer's end keeps running.
        case .end: if !answered { disarm() }
        }
        context.fireChannelRead(data)
    }

    /// The client closed its side while the connection lingers (its output closed): nothing is left to wait for.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if lingerTimer != nil, case .inputClosed = event as? ChannelEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    /// While the connection lingers it reads on by itself: Hummingbird has stopped asking (it takes no request after a
    /// close), and input left unread would turn the close into a reset.
    func channelReadComplete(context: ChannelHandlerContext) {
        if lingerTimer != nil { context.read() }
        context.fireChannelReadComplete()
    }

    /// What is dropped can fail to parse: Hummingbird must not answer it (a 400 after the answer that said close).
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !dropping else { return }
        context.fireErrorCaught(error)
    }

    /// Hummingbird closes the output after its last answer (a `Connection: close` request, a client that closed its
    /// side). NIO makes that a full close when the input is already closed, dropping what it still holds of the
    /// answers; so the close waits until NIO holds nothing, for at most the write deadline.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else { return context.close(mode: mode, promise: promise) }
        closeOutput(context: context, promise: promise, askedAt: context.eventLoop.now)
    }

    private func closeOutput(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?, askedAt: NIODeadline) {
        guard context.channel.isActive, (bufferedBytes(context.channel) ?? 0) > 0,
            context.eventLoop.now - askedAt < TimeAmount(limits.writeTimeout)
        else { return context.close(mode: .output, promise: promise) }
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(10)) {
            self.closeOutput(context: context, promise: promise, askedAt: askedAt)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            closesAfterResponse = head.headerFields[.connection]?.lowercased() == "close"
            // The last answer of a connection that takes no more requests says that it closes.
            if takesNoMore && unanswered == 1 && !closesAfterResponse {
                head.headerFields[.connection] = "close"
                closesAfterResponse = true
                return context.write(wrapOutboundOut(.head(head)), promise: promise)
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            unanswered = max(0, unanswered - 1)
            // After an answer that closes, no request is taken; those taken already are answered first.
            if closesAfterResponse { takesNoMore = true }
            if takesNoMore && unanswered == 0 {
                disarm()
                return close(afterWriting: data, promise: promise, context: context)
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

    /// Writes the last answer's end, then closes gently (see the type's comment): the output once the end is written,
    /// the connection when the client closes its side or after ``lingering``. A channel that cannot close its output
    /// alone is closed at once.
    private func close(afterWriting end: NIOAny, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        if let promise { written.futureResult.cascade(to: promise) }
        context.writeAndFlush(end, promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            let outputClosed = context.eventLoop.makePromise(of: Void.self)
            context.close(mode: .output, promise: outputClosed)
            outputClosed.futureResult.assumeIsolated().whenComplete { result in
                guard case .success = result, context.channel.isActive else { return context.close(promise: nil) }
                // Everything from now on is the client's leftovers: read by this handler, dropped.
                self.dropping = true
                self.lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingering) { context.close(promise: nil) }
                context.read()
            }
        }
    }

    private func arm(_ waiting: Waiting, after duration: Duration, context: ChannelHandlerContext) {
        let at = context.eventLoop.now + TimeAmount(duration)
        deadline = (waiting, at, duration)
        // A timer due at or before the new deadline stays: it finds the deadline moved and runs again at it.
        if timer == nil || at < timerAt { startTimer(at: at, context: context) }
    }

    private func startTimer(at: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        timerAt = at
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { self.timerRan(context: context) }
    }

    /// Closes the connection if its deadline has come, counting it under what it waited for. An idle deadline that
    /// comes while an answer still waits for the client to read it starts again: the read deadline times that.
    private func timerRan(context: ChannelHandlerContext) {
        timer = nil
        timerAt = .distantFuture
        guard let deadline else { return }
        guard deadline.at <= context.eventLoop.now else { return startTimer(at: deadline.at, context: context) }
        if deadline.waiting == .nextRequest, !context.channel.isWritable {
            return arm(.nextRequest, after: deadline.duration, context: context)
        }
        self.deadline = nil
        close(deadline.waiting, context: context)
    }

    private func close(_ waiting: Waiting, context: ChannelHandlerContext) {
        Counter(label: "storekeeper_http_connections_timed_out_total", dimensions: [("waiting_for", waiting.rawValue)]).increment()
        logger.debug("connection closed: client too slow", metadata: ["waiting_for": "\(waiting.rawValue)"])
        context.close(promise: nil)
    }

    /// No deadline until the next ``arm(_:after:context:)``; a timer still due finds none.
    private func disarm() {
        deadline = nil
    }

    /// Whether a timer is scheduled (the tests check that a closed connection keeps none).
    var isTimerScheduled: Bool { timer != nil }

    private func stopTimer() {
        deadline = nil
        timer?.cancel()
        timer = nil
        timerAt = .distantFuture
    }

    private func disarmRead() {
        readDeadline?.cancel()
        readDeadline = nil
    }
}
