import AppStoreModels
import Foundation
import LocalSigning
import SignedData
import TestSupport
import Testing

@Suite("Online mode: validity at now and OCSP")
struct OnlineCheckTests {
    struct Setup {
        let chain: LocalSigningChain
        let responder: TestOCSPResponder
        let signer: JWSSigner
        let clock = TestClock()
        let verifier: SignedDataVerifier

        init() throws {
            let now = Date()
            chain = try LocalSigningChain.generate(
                .init(
                    notValidBefore: now.addingTimeInterval(-86_400), notValidAfter: now.addingTimeInterval(86_400 * 365),
                    ocspResponderURI: "http://ocsp.test/responder"))
            responder = TestOCSPResponder(chain: chain)
            signer = try JWSSigner(chain: chain)
            let clock = self.clock
            verifier = SignedDataVerifier(
                rootCertificates: [chain.root],
                policy: VerificationPolicy(bundleId: "com.example.app", appAppleId: nil, environments: [.sandbox], validationTime: .now),
                clock: { clock.now }, ocspTransport: responder)
        }

        func transaction() throws -> String {
            var transaction = TransactionPayload(
                transactionId: UUID().uuidString, originalTransactionId: "1", productId: "pro", bundleId: "com.example.app",
                environment: .sandbox, signedDate: Int64(Date().timeIntervalSince1970 * 1000))
            transaction.purchaseDate = transaction.signedDate
            return try signer.sign(transaction)
        }
    }

    @Test("good answers for leaf and intermediate: accepted")
    func good() async throws {
        let setup = try Setup()
        _ = try await setup.verifier.verifyTransaction(try setup.transaction())
        #expect(setup.responder.queries == 2)
    }

    @Test("a revoked leaf or intermediate is rejected")
    func revoked() async throws {
        for revokeLeaf in [true, false] {
            let setup = try Setup()
            setup.responder.revoke(revokeLeaf ? setup.chain.leaf : setup.chain.intermediate)
            let error = await #expect(throws: VerificationError.self) { try await setup.verifier.verifyTransaction(try setup.transaction()) }
            #expect(error?.category == .untrusted)
        }
    }

    @Test("an unreachable responder is retryable, never accepted")
    func unreachable() async throws {
        let setup = try Setup()
        setup.responder.behave(.unreachable)
        let error = await #expect(throws: VerificationError.self) { try await setup.verifier.verifyTransaction(try setup.transaction()) }
        #expect(error?.category == .retryable)
    }

    @Test("a verified chain is trusted for 15 minutes, then checked again")
    func cacheLifetime() async throws {
        let setup = try Setup()
        _ = try await setup.verifier.verifyTransaction(try setup.transaction())
        _ = try await setup.verifier.verifyTransaction(try setup.transaction())
        #expect(setup.responder.queries == 2)
        setup.clock.now = Date().addingTimeInterval(16 * 60)
        setup.responder.revoke(setup.chain.leaf)
        await #expect(throws: VerificationError.self) { try await setup.verifier.verifyTransaction(try setup.transaction()) }
        #expect(setup.responder.queries > 2)
    }
}
