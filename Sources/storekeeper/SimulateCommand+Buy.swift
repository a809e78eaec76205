import AppStoreModels
import Foundation
import LocalSigning
import StorekeeperRuntime

extension SimulateCommand {
    /// `simulate buy --product basic.lifetime --account UUID`: Apple's `ONE_TIME_CHARGE` of a non-consumable (a
    /// lifetime unlock), a non-renewing subscription (a pass) or a consumable (a credit pack, `credits.100`), bought now
    /// on the dev clock for the account's token.
    func buy(server: DevServer, settings: [String: String], dev: DevEnvironment) async throws {
        guard let productId = product, let accountId = account.flatMap(UUID.init(uuidString:)) else { return }
        let types = try await server.checkProducts([productId], types: ["lifetime", "non_renewing", "consumable"])
        let bundleId = ProcessInfo.processInfo.environment["STOREKEEPER_BUNDLE_ID"] ?? settings["STOREKEEPER_BUNDLE_ID"] ?? "com.example.storekeeper"
        let chain = try dev.signingChain()
        let now = Int64((try await server.now().timeIntervalSince1970 * 1000).rounded(.down))
        let transactionId = String(UInt64.random(in: 3_000_000_000_000_000...3_999_999_999_999_999))
        var transaction = TransactionPayload(
            transactionId: transactionId, originalTransactionId: transactionId, productId: productId, bundleId: bundleId,
            environment: .sandbox, signedDate: now)
        transaction.type =
            switch types[productId]?.type {
            case "non_renewing": "Non-Renewing Subscription"
            case "consumable": "Consumable"
            default: "Non-Consumable"
            }
        // Apple signs what was paid: the catalogue's price, so the dev server's analytics have money.
        if let listed = types[productId], let price = listed.price, let currency = listed.currency {
            transaction.price = price
            transaction.currency = currency
        }
        transaction.purchaseDate = now
        transaction.originalPurchaseDate = now
        transaction.quantity = 1
        transaction.appAccountToken = accountId.uuidString.lowercased()
        transaction.inAppOwnershipType = "PURCHASED"
        transaction.transactionReason = "PURCHASE"
        let event = SimulatedEvent(
            notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: now, transaction: transaction, renewalInfo: nil)
        let signed = try NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: bundleId).requestBody(for: event)
        let (status, answer) = try await server.send(.POST, "/notifications/apple", body: signed)
        let body = String(decoding: answer, as: UTF8.self)
        guard status == 200 else { throw CommandFailure("Storekeeper answered \(status): \(body)") }
        say(
            "ONE_TIME_CHARGE of \(productId) (\(transaction.type ?? "")) for account \(accountId.uuidString.lowercased()): transaction \(transactionId): \(body)"
        )
        try await server.reportApplied(intakeAnswer: answer, account: accountId)
    }
}
