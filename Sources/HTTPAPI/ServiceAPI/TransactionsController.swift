import AppStoreModels
import Application
import Foundation
import Hummingbird
import Jobs
import Logging
import NIOCore
import Persistence
import SignedData
import StatementFencing
import Subscriptions

/// `POST /v1/accounts/{accountId}/transactions`: an app posts the StoreKit 2 signed transaction of a purchase so the
/// account does not wait for Apple's notification. The transaction is verified like notification contents, linked
/// to the account under the transfer policy and applied through the same code path as notifications; the answer is
/// the account's status.
public struct TransactionsController: Sendable {
    let verifier: SignedDataVerifier
    let claims: SubscriptionClaims
    let accounts: AccountsController
    let databaseTimeout: Duration

    public init(
        verifier: SignedDataVerifier, claims: SubscriptionClaims, accounts: AccountsController,
        databaseTimeout: Duration = .seconds(5)
    ) {
        self.verifier = verifier
        self.claims = claims
        self.accounts = accounts
        self.databaseTimeout = databaseTimeout
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/transactions") { request, context in
            try await self.claim(request, context: context)
        }
    }

    struct RequestBody: Decodable {
        var signedTransaction: String
    }

    func claim(_ request: Request, context: StorekeeperRequestContext) async throws -> AccountStatusResponse {
        let accountId = try AccountsController.accountId(context)
        let body = try await request.decodeJSONBody(
            as: RequestBody.self, otherwise: "body must be a JSON object with a signedTransaction string")
        let transaction: TransactionPayload
        do {
            transaction = try await verifier.verifyTransaction(body.signedTransaction)
        } catch {
            context.logger.notice("claimed transaction rejected", metadata: ["verification.category": "\(error.category.rawValue)"])
            throw Self.apiError(for: error)
        }
        if let problem = transaction.contentProblem {
            context.logger.notice("claimed transaction rejected", metadata: ["reason": "\(problem)"])
            throw APIError(.badRequest, code: .rejectedContent, message: problem)
        }
        var logger = context.logger
        logger[metadataKey: "subscription.id"] = "\(transaction.originalTransactionId)"
        let outcome: SubscriptionClaims.Outcome
        do {
            outcome = try await withDeadline(databaseTimeout) {
                try await claims.claim(transaction, signedTransaction: body.signedTransaction, by: accountId, now: accounts.clock())
            }
        } catch {
            logger.error("claim could not be stored", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError.unavailable("the transaction could not be stored; retry later")
        }
        switch outcome {
        case .claimed, .toppedUp, .purchased:
            logger.info("transaction claimed", metadata: ["account.id": "\(accountId)"])
            return try await accounts.status(of: accountId)
        case .ownedElsewhere:
            throw APIError(
                .conflict, code: .purchaseOwnedElsewhere,
                message:
                    "another account owns purchase \(transaction.originalTransactionId); the transfer policy is keep (one-time purchases always stay with their first account)"
            )
        case .notASubscription:
            throw APIError(
                .unprocessableContent, code: .notASubscription,
                message:
                    "the transaction (\(transaction.type ?? "purchase") \(transaction.productId)) is neither an auto-renewable subscription nor a product of the catalogue"
            )
        }
    }

    static func apiError(for error: VerificationError) -> APIError {
        switch error.category {
        case .malformed:
            return APIError(.badRequest, code: .malformedSignedTransaction, message: error.reason)
        case .certificate, .untrusted, .identity:
            return APIError(.unprocessableContent, code: .verificationFailed, message: error.reason)
        case .retryable:
            return APIError(.serviceUnavailable, code: .verificationUnavailable, message: error.reason)
        }
    }
}
