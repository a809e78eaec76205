import Foundation
import GooglePlayAPI
import Jobs
import Logging

/// Acknowledges a Play subscription purchase once Storekeeper has granted it to an account: Google refunds a purchase
/// not acknowledged within three days. Enqueued in the transaction that applied the purchase (one job per token), so
/// it survives a crash and is retried with the queue's backoff while Google or the network is away. A purchase no
/// account holds is not acknowledged: nothing was granted for it, and Google's refund is then the customer's due.
public struct GoogleAcknowledgeJob: JobHandler {
    public static let jobKind = "google-acknowledge"
    public let kind = Self.jobKind
    /// One Play call with its retries.
    public let timeout: Duration = .seconds(60)

    public struct Arguments: Codable, Sendable {
        /// The subscription's product id (without the base plan).
        public var productId: String
        public var purchaseToken: String
    }

    private let play: GooglePlayClient
    private let logger: Logger

    public init(play: GooglePlayClient, logger: Logger) {
        self.play = play
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        switch await Self.acknowledge(arguments, with: play) {
        case .success:
            return  // the worker completes the job
        case .failure(let error) where error.kind == .notFound || error.kind == .refused:
            // Google will not take it however often it is asked (the token is gone, or acknowledged for good already).
            logger.warning("Play refused an acknowledgement", metadata: ["google.error": "\(error)"])
            throw JobFailure.discard("Play refused the acknowledgement: \(error)")
        case .failure(let error):
            throw error
        }
    }

    private static func acknowledge(_ arguments: Arguments, with play: GooglePlayClient) async -> Result<Void, GooglePlayAPIError> {
        do {
            try await play.acknowledge(subscription: arguments.productId, token: arguments.purchaseToken)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
