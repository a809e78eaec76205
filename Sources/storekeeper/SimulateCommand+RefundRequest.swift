import AppStoreModels
import ArgumentParser
import Foundation
import LocalSigning
import StorekeeperRuntime

extension SimulateCommand {
    /// `simulate refund-request`: the customer asks Apple for a refund, and Apple's `CONSUMPTION_REQUEST` reaches the
    /// server — about a credit pack `buy` sold (`--transaction ID`), or about the period in force of the account's
    /// subscription (`--account UUID`). Then it prints what Storekeeper would answer (in dev nothing is sent: there is
    /// no Apple to send it to). Apple signs the purchase as it stands, so the request changes nothing of it.
    func refundRequest(server: DevServer, settings: [String: String], dev: DevEnvironment) async throws {
        let history = SimulatedHistory(directory: dev.directory.appendingPathComponent("simulate"))
        let now = Int64((try await server.now().timeIntervalSince1970 * 1000).rounded(.down))
        let bundleId = Self.bundleId(settings)
        let event: SimulatedEvent
        let account: UUID
        let purchase: String
        if let transactionId = transaction {
            guard let sale = history.sale(transactionId) else {
                throw CommandFailure(
                    "transaction \(transactionId) was not sold by `simulate buy` in this folder: give the id `buy` printed for a pack (a subscription's period: `simulate refund-request --account UUID`)"
                )
            }
            guard sale.type == "consumable" else {
                throw CommandFailure(
                    "transaction \(transactionId) is \(sale.productId), not a credit pack: Apple asks about packs and subscriptions (`simulate refund-request --account UUID` for a subscription's period)"
                )
            }
            event = SimulatedEvent.consumptionRequest(
                transaction: Self.transaction(of: sale, id: transactionId, bundleId: bundleId, signedDate: now), renewalInfo: nil, status: nil,
                signedDate: now)
            (account, purchase) = (sale.accountId, "\(sale.productId), transaction \(transactionId)")
        } else {
            guard let accountId = self.account.flatMap(UUID.init(uuidString:)) else { return }
            let subscriptionId = originalTransactionId ?? Self.originalTransactionId(for: accountId)
            // Only what this folder signed last says the subscription's state (renewing or not, refunded, in grace…):
            // signing another would change it.
            guard var current = history.current(of: subscriptionId), let last = current.lastSigned else {
                throw CommandFailure(
                    "subscription \(subscriptionId) has no notification signed by `simulate` in this folder: `simulate subscribe --account \(accountId.uuidString.lowercased())` first"
                )
            }
            // Another account's subscription (`--original-transaction-id`) is refused before anything is signed: Apple's
            // request names the buyer, and the answer would be listed there, not under --account.
            let asked = accountId.uuidString.lowercased()
            guard last.transaction.appAccountToken?.lowercased() == asked else {
                throw CommandFailure(
                    "subscription \(subscriptionId) was bought by \(last.transaction.appAccountToken.map { "account \($0)" } ?? "no account") here, not by \(asked)"
                )
            }
            let signedDate = max(now, (current.signedDate ?? 0) + 1)
            event = SimulatedEvent.consumptionRequest(
                transaction: last.transaction, renewalInfo: last.renewalInfo, status: last.status, signedDate: signedDate)
            current.signedDate = signedDate
            try history.record(current, of: subscriptionId)
            (account, purchase) = (accountId, "subscription \(subscriptionId), transaction \(last.transaction.transactionId)")
        }
        let requestId = UUID()
        let signer = NotificationSigner(signer: try JWSSigner(chain: dev.signingChain()), bundleId: bundleId)
        let (status, answer) = try await server.send(
            .POST, "/notifications/apple", body: try signer.requestBody(for: event, notificationUUID: requestId))
        guard status == 200 else { throw CommandFailure("Storekeeper answered \(status): \(String(decoding: answer, as: UTF8.self))") }
        say("CONSUMPTION_REQUEST about \(purchase): \(String(decoding: answer, as: UTF8.self))")
        try await server.reportApplied(intakeAnswer: answer, account: account)
        try await server.reportRefundRequest(requestId, account: account, about: purchase)
    }
}

extension SimulateCommand {
    /// `refund-request` is about a pack (`--transaction`, the sale's own account and product) or about a subscription
    /// (`--account`, its period in force); options of the other scenarios would be silently ignored, so they are refused.
    func validateRefundRequest() throws {
        if duration != nil || to != nil || trial || periodDays != nil {
            throw ValidationError("refund-request takes --transaction ID (a pack) or --account UUID (a subscription's period), nothing else")
        }
        if let transaction {
            guard Self.isAppleId(transaction) else {
                throw ValidationError("--transaction is the transaction `simulate buy` printed: 1–32 digits")
            }
            guard account == nil, product == nil, originalTransactionId == nil else {
                throw ValidationError("refund-request --transaction takes no --account, --product or --original-transaction-id: they are the sale's")
            }
        } else {
            guard account != nil else {
                throw ValidationError("refund-request needs --account UUID (its subscription's period) or --transaction ID (a pack `buy` sold)")
            }
            if product != nil { throw ValidationError("refund-request is about the period in force: its product is the subscription's") }
        }
    }

    /// Whether `text` is shaped as Apple's transaction ids are: 1–32 ASCII digits (they also name the history's files).
    static func isAppleId(_ text: String) -> Bool {
        (1...32).contains(text.count) && text.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
