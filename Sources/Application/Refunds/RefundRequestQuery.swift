import Credits
import Entitlements
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// An account's refund requests, newest first. Each one that can still be answered — `pending`, or `not_configured`
/// (its store's API was not set, as in `storekeeper dev`), before the store's deadline — comes with the answer
/// Storekeeper would send now, so the app and operators see it before it is due, or where none is ever sent.
public struct RefundRequestQuery: Sendable {
    /// A request as listed: as stored, with `answerPreview` beside its members while it can be answered.
    public struct Listed: Sendable, Encodable {
        public var request: RefundRequests.Request
        public var answerPreview: RefundAnswerPreview?

        enum CodingKeys: String, CodingKey { case answerPreview }

        public func encode(to encoder: any Encoder) throws {
            try request.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(answerPreview, forKey: .answerPreview)
        }
    }

    let client: PostgresClient
    let credits: CreditLedger
    let policy: RefundPolicy
    /// The stores whose API this process answers through; nil when it does not know (an operator command).
    let answering: Set<Store>?
    let requests: RefundRequests

    public init(client: PostgresClient, credits: CreditLedger, policy: RefundPolicy, answering: Set<Store>?, logger: Logger) {
        self.client = client
        self.credits = credits
        self.policy = policy
        self.answering = answering
        self.requests = RefundRequests(logger: logger)
    }

    /// The account's latest `limit` requests; those still answerable at `now` with their preview. Past its deadline a
    /// request is answered by no one (the job closes a pending one as `missed_deadline`), so it has none — which also
    /// bounds the ledger reads to the requests of the store's last 12 or 24 hours.
    public func requests(ofAccount account: AccountID, limit: Int, now: Date) async throws -> [Listed] {
        try await client.withFencedConnection { connection in
            var listed = try await requests.requests(ofAccount: account, limit: limit, on: connection).map { Listed(request: $0) }
            let open = listed.indices.filter {
                [.pending, .notConfigured].contains(listed[$0].request.state) && now < listed[$0].request.deadlineAt
            }
            guard !open.isEmpty else { return listed }
            let consented = try await requests.hasConsented(account, on: connection)
            for index in open {
                let request = listed[index].request
                let draft = try await RefundAnswerDraft.read(for: request, credits: credits, policy: policy, on: connection)
                listed[index].answerPreview = RefundAnswerPreview(
                    answer: draft.answer, source: draft.source, consumptionPercentage: draft.milliPercent, consented: consented,
                    notSent: (unanswerable(request) ? [.notConfigured] : []) + (consented ? [] : [.noConsent]))
            }
            return listed
        }
    }

    /// Whether no store API will take the answer: none was configured when the request arrived, or the store's is not
    /// now (a pending request then waits out its deadline, or its job records `rejected`).
    private func unanswerable(_ request: RefundRequests.Request) -> Bool {
        request.state == .notConfigured || answering.map { !$0.contains(request.store) } == true
    }
}
