import Foundation
import Jobs
import Logging
import PostgresNIO

/// Releases the holds whose expiry has come and that are still held: enqueued for each second in which holds expire
/// (``HoldExpirySchedule``), to run at its end by the worker's clock (the dev clock moves it too). Each run releases
/// every hold due by then, earliest first, in transactions of ``CreditHolds/expiryBatch``, resting between full
/// batches; a run with more left after ``runFor`` runs again at once, so other jobs are not kept waiting. A hold past its expiry can no longer be settled
/// (``CreditHolds``): a late run changes nothing but when its credits are back.
public struct HoldExpiryJob: JobHandler {
    public static let jobKind = "hold-expiry"
    /// How long one run releases holds before it makes way for other jobs.
    static let runFor: Duration = .seconds(10)
    /// How much longer than a full batch took the sweep rests before the next.
    static let restPerBatch = 9

    public struct Arguments: Codable, Sendable {
        /// The end of the second whose holds expire (`nil`: the periodic sweep, or a job of the first release of
        /// holds, one per hold).
        public var at: Date?

        public init(at: Date?) { self.at = at }
    }

    /// A sweep every minute besides the jobs of each second: a hold whose group committed just after its second's job
    /// looked is released by the next sweep at the latest.
    public static let schedule = PeriodicSchedule(name: jobKind, kind: jobKind, every: 60, maximumCatchUp: 1) { _ in Arguments(at: nil) }

    public let kind = Self.jobKind
    public let timeout: Duration = .seconds(30)
    private let holds: CreditHolds
    private let client: PostgresClient
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(holds: CreditHolds, client: PostgresClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.holds = holds
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        // Claimed before its time by this clock (another process's clock ran ahead): wait for it.
        if let at = arguments.at, clock() < at { throw JobFailure.snooze(until: at) }
        let started = ContinuousClock.now
        var failed = Set<UUID>()
        while true {
            let batch = ContinuousClock.now
            guard try await holds.expireDue(now: clock(), failed: &failed) == CreditHolds.expiryBatch else { break }
            // A backlog (a worker back after a stop, a burst of abandoned work): between full batches the sweep
            // rests nine times as long as the batch took, so it holds accounts' locks and the database a tenth of the
            // time and the app's spends keep nine tenths of their pace (`storekeeper-bench hold-expiry`: resting four
            // times, they kept three quarters); never past its run.
            let rest = min((ContinuousClock.now - batch) * Self.restPerBatch, Self.runFor)
            // The queue schedules by the wall clock: "at once" is its now, whatever the dev clock says.
            if ContinuousClock.now - started + rest > Self.runFor {
                throw JobFailure.snooze(
                    until: Date().addingTimeInterval(Double(rest.components.seconds) + Double(rest.components.attoseconds) * 1e-18))
            }
            try await Task.sleep(for: rest)
        }
        try await client.withFencedConnection { try await execution.complete(on: $0) }
    }
}
