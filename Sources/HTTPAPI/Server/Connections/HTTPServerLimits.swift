/// How much a client may take of the HTTP server: time to send a request, idle keep-alive, time to read an answer,
/// connections and body memory. Every value is configurable (`STOREKEEPER_HTTP_*`); the defaults let Apple and the
/// app's services through untouched and bound what a stranger holding connections open can cost.
public struct HTTPServerLimits: Sendable, Equatable {
    /// From a connection's start until its first request head has arrived.
    public var headTimeout: Duration
    /// From a request's head until its last body byte.
    public var bodyTimeout: Duration
    /// From a response's end until the next request head on the same connection. Its default is longer than the 60 s
    /// that clients and proxies commonly keep an idle connection for (AsyncHTTPClient's pool, an AWS load balancer,
    /// nginx's upstream `keepalive_timeout`): a request sent on a connection at the instant the server closes it for
    /// idleness gets no answer at all, so the side that sends must be the one to give up first.
    public var idleTimeout: Duration
    /// How long a client may take to read 64 KiB of an answer that waits for it: while the connection's output
    /// buffers are full (what is on its way to the client, 64 KiB more in the kernel, and NIO holding more than its
    /// high-water mark), a client that reads less than that in this time is closed. One that reads at least that,
    /// about 2 KiB a second with the default, is never cut off for the size of an answer.
    public var writeTimeout: Duration
    /// Connections served at once by one process; further ones wait in the listen backlog.
    public var maximumConnections: Int
    /// Bytes of request bodies held in memory at once, every byte of every body counted.
    public var bodyMemory: Int
    /// Bytes of one request head (its header lines together; one line at most as much): a head is buffered whole
    /// before it is parsed, so this bounds what a connection that never finishes its head holds.
    public var headBytes: Int

    public init(
        headTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(75),
        writeTimeout: Duration = .seconds(30), maximumConnections: Int = 1_024, bodyMemory: Int = 16 * 1024 * 1024,
        headBytes: Int = 16 * 1024
    ) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maximumConnections = maximumConnections
        self.bodyMemory = bodyMemory
        self.headBytes = headBytes
    }

    /// What `serve` may hold resident at most under these limits (docs/security.md, "Memory"): a running process's
    /// own memory, each connection at its worst, and the request bodies' budget. With the defaults, 208 MiB: within
    /// the 256 MiB the Kubernetes manifest gives a pod.
    public var memoryBound: Int { Self.processMemory + maximumConnections * Self.connectionMemory + bodyMemory }

    /// A running `serve`, database pool and caches included, before any client (48 MB measured).
    static let processMemory = 64 << 20
    /// One connection at its worst with the default head limit, NIO's and Hummingbird's per-connection state and
    /// read buffers: 44 KiB measured for a head of nearly 16 KiB, 70 KiB for a 60 KiB chunk-size line, 105 KiB for
    /// 1 MiB ones (2,048 connections of each; an idle connection is 14 KiB).
    static let connectionMemory = 128 << 10
}
