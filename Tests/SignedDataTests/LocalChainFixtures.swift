import AppStoreModels
import Foundation
import LocalSigning
import SignedData
import X509

/// In-process Apple-shaped chains and signed payloads for verifier tests.
enum LocalRoot {
    static func make() throws -> Certificate { try LocalSigningChain.generate().root }
}

struct SignedFixture {
    static let bundleId = "com.example.app"
    /// 2025-01-01T00:00:00Z, inside the default chain validity.
    static let signedDate: Int64 = 1_735_689_600_000

    let chain: LocalSigningChain
    let signer: JWSSigner

    init(_ options: LocalSigningChain.Options = .init(), x5c: ((LocalSigningChain) throws -> [Certificate])? = nil) throws {
        chain = try LocalSigningChain.generate(options)
        signer = try JWSSigner(chain: chain, x5c: try x5c?(chain))
    }

    func verifier(
        roots: [Certificate]? = nil, environments: Set<AppStoreEnvironment> = [.sandbox], appAppleId: Int64? = nil,
        validationTime: VerificationPolicy.ValidationTime = .signedDate, now: Date = Date()
    ) -> SignedDataVerifier {
        SignedDataVerifier(
            rootCertificates: roots ?? [chain.root],
            policy: VerificationPolicy(
                bundleId: Self.bundleId, appAppleId: appAppleId, environments: environments, validationTime: validationTime),
            clock: { now })
    }

    func transaction(environment: AppStoreEnvironment? = .sandbox, bundleId: String = Self.bundleId) -> TransactionPayload {
        var transaction = TransactionPayload(
            transactionId: "1001", originalTransactionId: "1000", productId: "pro.monthly", bundleId: bundleId,
            environment: environment, signedDate: Self.signedDate)
        transaction.purchaseDate = Self.signedDate
        transaction.expiresDate = Self.signedDate + 30 * 86_400_000
        return transaction
    }

    func notification(
        environment: AppStoreEnvironment = .sandbox, bundleId: String = Self.bundleId, appAppleId: Int64? = nil,
        signedTransaction: String? = nil
    ) throws -> String {
        let data = NotificationData(
            appAppleId: appAppleId, bundleId: bundleId, environment: environment,
            signedTransactionInfo: try signedTransaction ?? signer.sign(transaction(environment: environment, bundleId: bundleId)),
            status: 1)
        return try signer.sign(
            NotificationPayload(
                notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: UUID().uuidString, data: data,
                signedDate: Self.signedDate))
    }
}
