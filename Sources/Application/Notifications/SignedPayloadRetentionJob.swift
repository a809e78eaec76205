import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Clears the signed payloads of notifications older than the retention period
/// (`STOREKEEPER_SIGNED_RETENTION_DAYS`), a thousand per transaction; hourly. Replay, status and credits read the
/// verified facts, which stay; what goes is the ability to verify Apple's signature again.
public struct SignedPayloadRetentionJob: JobHandler {
    public static let jobKind = "signed-payload-retention"
    public let kind = Self.jobKind
    private let client: PostgresClient
    private let retention: TimeInterval
    private let archive: SignedPayloadArchive
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, retention: TimeInterval, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.retention = retention
        self.archive = SignedPayloadArchive(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    public static func schedule(every interval: TimeInterval = 3600) -> PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: interval, maximumCatchUp: 1) { _ in [String: String]() }
    }

    public func run(_ execution: JobExecution) async throws {
        let cutoff = clock().addingTimeInterval(-retention)
        var cleared = 0
        while true {
            let batch = try await client.withTransaction(logger: logger) {
                try await archive.clearSignedPayloads(receivedBefore: cutoff, limit: 1000, on: $0)
            }
            cleared += batch
            if batch < 1000 { break }
        }
        if cleared > 0 { logger.info("old signed payloads cleared", metadata: ["notifications.cleared": "\(cleared)"]) }
    }
}
