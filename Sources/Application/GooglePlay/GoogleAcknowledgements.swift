import Foundation
import Logging
import Persistence
import PostgresNIO

/// Play purchases Storekeeper granted and Google has not been told of yet (``GoogleAcknowledgeJob``): Google refunds
/// what is not acknowledged within three days, so what has waited more than a day is shown on the dashboard and
/// counted in `storekeeper_google_unacknowledged_purchases`.
public struct GoogleAcknowledgements: Sendable {
    /// How long a purchase may wait before it is shown as late.
    public static let lateAfter: TimeInterval = 86_400

    private let client: PostgresClient
    private let store: GoogleProductStore
    private let clock: @Sendable () -> Date

    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.store = GoogleProductStore(logger: logger)
        self.clock = clock
    }

    /// How many purchases waited more than a day, and the oldest `limit` of them.
    public func late(limit: Int) async throws -> (count: Int, oldest: [GoogleProductStore.Waiting]) {
        let before = clock().addingTimeInterval(-Self.lateAfter)
        return try await client.withFencedConnection { try await store.waitingAcknowledgement(grantedBefore: before, limit: limit, on: $0) }
    }
}
