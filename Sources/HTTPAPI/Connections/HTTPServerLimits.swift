/// How much a client may take of the HTTP server: time to send a request, idle keep-alive, connections and body
/// memory. Every value is configurable (`STOREKEEPER_HTTP_*`); the defaults let Apple and the app's services through
/// untouched and bound what a stranger holding connections open can cost.
public struct HTTPServerLimits: Sendable, Equatable {
    /// From a connection's start until its first request head has arrived.
    public var headTimeout: Duration
    /// From a request's head until its last body byte.
    public var bodyTimeout: Duration
    /// From a response's end until the next request head on the same connection.
    public var idleTimeout: Duration
    /// Connections served at once by one process; further ones wait in the listen backlog.
    public var maximumConnections: Int
    /// Bytes of request bodies held in memory at once, beyond the first ``RequestBodyBudget/freeBytes`` of each.
    public var bodyMemory: Int

    public init(
        headTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(60),
        maximumConnections: Int = 4_096, bodyMemory: Int = 16 * 1024 * 1024
    ) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
        self.bodyMemory = bodyMemory
    }
}
