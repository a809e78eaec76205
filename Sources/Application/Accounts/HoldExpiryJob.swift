import Foundation
import Jobs
import Logging
import PostgresNIO

/// Releases a hold at its expiry, unless it was settled or released first: enqueued with the hold, to run at
/// `expiresAt` by the worker's clock (the dev clock moves it too). A late run changes nothing but the time: a hold past
/// its expiry can no longer be settled (``CreditHolds``).
public struct HoldExpiryJob: JobHandler {
    public static let jobKind = "hold-expiry"

    public struct Arguments: Codable, Sendable {
        public var holdId: UUID
    }

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
        let now = clock()
        // Claimed before its time by this clock (another process's clock ran ahead): wait for it.
        if let hold = try await holds.hold(arguments.holdId), hold.state == .held, now < hold.expiresAt {
            throw JobFailure.snooze(until: hold.expiresAt)
        }
        try await holds.expire(arguments.holdId, now: now)
        try await client.withConnection { try await execution.complete(on: $0) }
    }
}
