import Credits
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Every minute: rolls the credit ledger up into the usage figures (rows at least ten minutes old, so none is
/// counted before the transaction that wrote it commits), then folds the analytics differences the workers appended
/// into the daily sums — a chart then reads a minute's worth of differences at most beside them.
public struct AnalyticsCompactionJob: JobHandler {
    public static let jobKind = "analytics-compact"
    public let kind = Self.jobKind
    /// Folding sums changes no account's status.
    public let changesAccountStatus = false
    /// How old a ledger row must be to be rolled up: longer than any transaction that posts credits runs.
    public static let ledgerMargin: TimeInterval = 600
    private let client: PostgresClient
    private let rollups: AnalyticsRollups
    private let catalogue: TierCatalogue
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, catalogue: TierCatalogue, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.rollups = AnalyticsRollups(logger: logger)
        self.catalogue = catalogue
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let cutoff = clock().addingTimeInterval(-Self.ledgerMargin)
        // A backlog goes in bounded transactions, each committed before the next (AnalyticsRollups' limits), for at
        // most `runFor`: the next minute's run goes on from there, and no run is left waiting behind another.
        let started = ContinuousClock.now
        var more = true
        while more && ContinuousClock.now - started < Self.runFor {
            let (usage, folded, left) = try await client.withFencedTransaction(logger: logger) { connection in
                let usage = try await rollups.rollUpUsage(
                    before: cutoff, limit: Self.ledgerRowsPerTransaction, tier: { Self.tier(of: $0, catalogue: catalogue) }, on: connection)
                let folded = try await rollups.compact(limit: Self.differencesPerTransaction, on: connection)
                return (usage.rows, folded, usage.more || folded == Self.differencesPerTransaction)
            }
            more = left
            if usage + folded > 0 {
                logger.debug("analytics rolled up", metadata: ["analytics.ledger_rows": "\(usage)", "analytics.folded": "\(folded)"])
            }
        }
    }

    /// How long one run works through a backlog (its schedule is a minute).
    static let runFor: Duration = .seconds(20)
    /// Ledger ids rolled up, and differences folded, per transaction.
    static let ledgerRowsPerTransaction: Int64 = 50_000
    static let differencesPerTransaction = 100_000

    /// The tier credits of `source` count under: its subscription's or purchase's tier by the catalogue, a grant's
    /// tier, `free` for the free tier's allowances, `top-up` for bought credits.
    public static func tier(of source: AnalyticsRollups.UsageSource, catalogue: TierCatalogue) -> String {
        switch source.kind {
        case "daily": return source.name == "-" ? "free" : source.name
        case "free": return "free"
        case "topup": return "top-up"
        default:
            if catalogue.tier(id: source.name) != nil { return source.name }
            return catalogue.tier(ofProduct: source.name)?.tier.id ?? source.name
        }
    }

    /// Every minute; a missed minute is made up by the next run, which folds everything.
    public static var schedule: PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: 60, maximumCatchUp: 1) { _ in [String: String]() }
    }
}
