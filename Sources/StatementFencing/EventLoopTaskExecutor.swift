import NIOCore

/// Runs tasks on one NIO event loop: a task that prefers it (`Task(executorPreference:)`,
/// `withTaskExecutorPreference`) resumes on the thread that reads its connection's answers, instead of being handed
/// to another thread after every statement.
///
/// A statement's answer arrives on its connection's event loop; a task waiting for it resumes wherever its executor
/// says. When that is a busy HTTP event loop, each round trip waits there behind the requests it is serving, and a
/// transaction of nine statements waits nine times.
///
/// Only statements run here: ``ClosedConnectionWatch``'s fence, and the spends' and holds' commit groups (their loops
/// and transactions). Other transaction bodies that called an actor from here (Stripe's rate limiter, Google's token
/// cache) crashed the process with a corrupted heap, reproducibly in the Stripe and Play test suites; the cause was not
/// found, and those bodies run on the global executor.
public final class EventLoopTaskExecutor: TaskExecutor, Sendable {
    /// The loop the tasks run on.
    public let loop: any EventLoop

    public init(_ loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
