import ServiceLifecycle
import StatementFencing

extension JobWorker {
    /// How long a step of the claim loop (a claim, the look-up of the next due job) may go on once a graceful stop has
    /// begun. With the database gone such a step waits for a connection until ``databaseTimeout``: `work` took 30 s to
    /// stop, claiming nothing. A claim that answers within this grace starts its jobs as before; one cut short leaves
    /// what it claimed to ``releaseAtStop()``, or to another worker's rescue.
    static let stoppingStepGrace: Duration = .seconds(1)

    /// How long the release of unfinished jobs and the deregistration together may take at the end of a stop. With the
    /// database away they cannot be written: another worker rescues the jobs once this worker's heartbeat is
    /// ``Options/rescueAfter`` old.
    static let stopStepsTimeout: Duration = .seconds(5)

    private enum StepOutcome<Value: Sendable>: Sendable {
        case value(Value)
        case cutShort
    }

    /// `operation` within ``databaseTimeout``, and given up ``stoppingStepGrace`` after a graceful stop began.
    /// (ServiceLifecycle's `cancelWhenGracefulShutdown` cancels at the stop's first instant: a claim that would answer
    /// within the grace is given up, and the jobs it claimed wait for the release instead of running.)
    func claimLoopStep<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: StepOutcome<Value>.self) { group in
            group.addTask { .value(try await withDeadline(Self.databaseTimeout, operation)) }
            group.addTask {
                // Returns at once if the stop began already; outside a service group it waits for the cancellation.
                try await gracefulShutdown()
                try await Task.sleep(for: Self.stoppingStepGrace)
                return .cutShort
            }
            defer { group.cancelAll() }
            switch try await group.next() {
            case .value(let value): return value
            case .cutShort, nil: throw JobQueueError(.stopping, "given up \(Self.stoppingStepGrace) into the stop")
            }
        }
    }

    /// Releases the jobs this worker still runs (cancelled at the grace's end, or claimed by a claim cut short) and
    /// deregisters it, from a task of its own (the stopping one may be cancelled by then, which would start nothing),
    /// within ``stopStepsTimeout``.
    func releaseAtStop() async {
        let outcome = await Task { [queue, id] in
            try await withDeadline(Self.stopStepsTimeout) {
                let released = try await queue.releaseRunningJobs(of: id)
                try await queue.deregister(workerID: id)
                return released
            }
        }.result
        switch outcome {
        case .success(let released) where released > 0:
            logger.warning("worker stopped with jobs unfinished; released them", metadata: ["jobs.released": "\(released)"])
        case .success:
            break
        case .failure(let error):
            logger.warning(
                "worker stopped without releasing its jobs or deregistering; another worker rescues its jobs once its heartbeat is \(options.rescueAfter) old",
                metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
