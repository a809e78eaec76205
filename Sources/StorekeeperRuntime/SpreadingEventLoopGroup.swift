import Dispatch
import NIOCore

/// An event loop group whose `any()` takes turns like `next()`, for the database connections of a process whose tasks
/// run on NIO's event loops.
///
/// The connection pool opens its connections on `any()`, which on NIO's own groups is the loop the caller runs on —
/// and the pool runs on one loop. Every connection then lived on that loop, and so did every task resumed by a
/// connection's answer: `work` used one of its loops while PostgreSQL waited for it. Connections opened on the loops
/// in turn spread the tasks over all of them.
public final class SpreadingEventLoopGroup: EventLoopGroup {
    private let base: any EventLoopGroup

    public init(_ base: any EventLoopGroup) {
        self.base = base
    }

    public func next() -> any EventLoop { base.next() }

    public func any() -> any EventLoop { base.next() }

    public func makeIterator() -> EventLoopIterator { base.makeIterator() }

    /// The loops belong to `base`, which is shut down by its owner.
    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        queue.async { callback(EventLoopError.unsupportedOperation) }
    }

    public func _preconditionSafeToSyncShutdown(file: StaticString, line: UInt) {
        base._preconditionSafeToSyncShutdown(file: file, line: line)
    }
}
