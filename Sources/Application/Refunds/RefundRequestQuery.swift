import Credits
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// An account's refund requests, newest first, each still open — `pending`, or `not_configured` (its store's API was
/// not set, as in `storekeeper dev`) — with the answer Storekeeper would send now (`answerPreview`), so the app and
/// operators see it before the answer is due, or where none is ever sent.
public struct RefundRequestQuery: Sendable {
    let client: PostgresClient
    let credits: CreditLedger
    let policy: RefundPolicy
    let requests: RefundRequests

    public init(client: PostgresClient, credits: CreditLedger, policy: RefundPolicy, logger: Logger) {
        self.client = client
        self.credits = credits
        self.policy = policy
        self.requests = RefundRequests(logger: logger)
    }

    /// The account's latest `limit` requests, the open ones with their preview.
    public func requests(ofAccount account: AccountID, limit: Int) async throws -> [RefundRequests.Request] {
        try await client.withConnection { connection in
            var listed = try await requests.requests(ofAccount: account, limit: limit, on: connection)
            let open = listed.indices.filter { [.pending, .notConfigured].contains(listed[$0].state) }
            guard !open.isEmpty else { return listed }
            let consented = try await requests.hasConsented(account, on: connection)
            for index in open {
                let request = listed[index]
                let draft = try await RefundAnswerDraft.read(for: request, credits: credits, policy: policy, on: connection)
                listed[index].answerPreview = RefundRequests.Preview(
                    answer: draft.answer, source: draft.source, consumptionPercentage: draft.milliPercent, consented: consented,
                    wouldSend: request.state == .pending && consented)
            }
            return listed
        }
    }
}
