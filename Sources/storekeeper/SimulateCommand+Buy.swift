import AppStoreModels
import Foundation
import LocalSigning
import StorekeeperRuntime

extension SimulateCommand {
    /// `simulate buy --product basic.lifetime --account UUID`: Apple's `ONE_TIME_CHARGE` of a non-consumable (a
    /// lifetime unlock), a non-renewing subscription (a pass) or a consumable (a credit pack, `credits.100`), bought now
    /// on the dev clock for the account's token. The sale is kept in the history, for `refund-request`.
    func buy(server: DevServer, settings: [String: String], dev: DevEnvironment) async throws {
        guard let productId = product, let accountId = account.flatMap(UUID.init(uuidString:)) else { return }
        guard let listed = try await server.checkProducts([productId], types: ["lifetime", "non_renewing", "consumable"])[productId] else { return }
        let transactionId = String(UInt64.random(in: 3_000_000_000_000_000...3_999_999_999_999_999))
        let now = Int64((try await server.now().timeIntervalSince1970 * 1000).rounded(.down))
        let sale = SimulatedHistory.Sale(
            productId: productId, type: listed.type, accountId: accountId, purchaseDate: now, price: listed.price, currency: listed.currency)
        let bundleId = Self.bundleId(settings)
        let transaction = Self.transaction(of: sale, id: transactionId, bundleId: bundleId, signedDate: now)
        let event = SimulatedEvent(
            notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: now, transaction: transaction, renewalInfo: nil)
        let signed = try NotificationSigner(signer: try JWSSigner(chain: dev.signingChain()), bundleId: bundleId).requestBody(for: event)
        let (status, answer) = try await server.send(.POST, "/notifications/apple", body: signed)
        let body = String(decoding: answer, as: UTF8.self)
        guard status == 200 else { throw CommandFailure("Storekeeper answered \(status): \(body)") }
        try SimulatedHistory(directory: dev.directory.appendingPathComponent("simulate")).record(sale, transactionId: transactionId)
        say(
            "ONE_TIME_CHARGE of \(productId) (\(transaction.type ?? "")) for account \(accountId.uuidString.lowercased()): transaction \(transactionId): \(body)"
        )
        try await server.reportApplied(intakeAnswer: answer, account: accountId)
    }

    /// The sale as Apple signs its transaction: type and price the catalogue's, bought by the account's token.
    static func transaction(of sale: SimulatedHistory.Sale, id: String, bundleId: String, signedDate: Int64) -> TransactionPayload {
        var transaction = TransactionPayload(
            transactionId: id, originalTransactionId: id, productId: sale.productId, bundleId: bundleId, environment: .sandbox, signedDate: signedDate
        )
        transaction.type =
            switch sale.type {
            case "non_renewing": "Non-Renewing Subscription"
            case "consumable": "Consumable"
            default: "Non-Consumable"
            }
        // Apple signs what was paid: the catalogue's price, so the dev server's analytics have money.
        if let price = sale.price, let currency = sale.currency {
            transaction.price = price
            transaction.currency = currency
        }
        transaction.purchaseDate = sale.purchaseDate
        transaction.originalPurchaseDate = sale.purchaseDate
        transaction.quantity = 1
        transaction.appAccountToken = sale.accountId.uuidString.lowercased()
        transaction.inAppOwnershipType = "PURCHASED"
        transaction.transactionReason = "PURCHASE"
        return transaction
    }

    static func bundleId(_ settings: [String: String]) -> String {
        ProcessInfo.processInfo.environment["STOREKEEPER_BUNDLE_ID"] ?? settings["STOREKEEPER_BUNDLE_ID"] ?? "com.example.storekeeper"
    }
}
