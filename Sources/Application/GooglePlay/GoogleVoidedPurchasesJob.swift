import Foundation
import Jobs
import Logging

/// The hourly catch-up of Play refunds: `voidedpurchases.list` over Google's 30 days, paged, every entry not recorded
/// yet taken back (``GoogleRefunds/catchUp()``). A voided-purchase notification is sent for most refunds, not all
/// (a refund without a notification topic, one lost while the intake was away): the list is the authority.
public struct GoogleVoidedPurchasesJob: JobHandler {
    public static let jobKind = "google-voided-purchases"
    public let kind = Self.jobKind
    /// Pages of a thousand entries, each a Play call and a transaction per new entry.
    public let timeout: Duration = .seconds(600)
    private let refunds: GoogleRefunds
    private let logger: Logger

    public init(refunds: GoogleRefunds, logger: Logger) {
        self.refunds = refunds
        self.logger = logger
    }

    /// The schedule that enqueues it.
    public static func schedule(every interval: TimeInterval) -> PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: interval, maximumCatchUp: 1) { _ in [String: String]() }
    }

    public func run(_ execution: JobExecution) async throws {
        let report = try await refunds.catchUp()
        logger.info("Play refunds caught up", metadata: ["google.voided.listed": "\(report.listed)", "google.voided.recorded": "\(report.recorded)"])
    }
}
