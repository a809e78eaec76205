import AppStoreModels
import Crypto
import Foundation
import PayloadDecoding
@_spi(FixedExpiryValidationTime) import X509

/// Verifies App Store signed data (JWS with an `x5c` chain) against configured roots, following the recipe all four
/// of Apple's server libraries share, and checks the verified payload's identity against a ``VerificationPolicy``.
///
/// ```swift
/// let verifier = SignedDataVerifier(rootCertificates: [appleRootCAG3], policy: policy)
/// let notification = try await verifier.verifyNotification(signedPayload)
/// switch verifier.identityVerdict(for: notification) { case .accepted: …; case .ignored(let reason): … }
/// ```
public struct SignedDataVerifier: Sendable {
    public let policy: VerificationPolicy
    private let roots: CertificateStore
    private let clock: @Sendable () -> Date
    private let chainCache: VerifiedChainCache
    private let ocspTransport: (any OCSPTransport)?
    /// One decoder for every payload (and header): several times faster than `JSONDecoder` on these payloads.
    static let decoder = PayloadDecoder()

    /// - Parameters:
    ///   - rootCertificates: trust anchors (Apple Root CA - G3 in production). `x5c[2]` is never trusted.
    ///   - clock: "now" for `.now` validation and for payloads without `signedDate`; injectable for tests.
    ///   - cachesChains: remember chains that validated (see `VerifiedChainCache`); off only to measure or compare.
    ///   - ocspTransport: with `.now` validation (online mode), checks leaf and intermediate with OCSP through it,
    ///     hard-fail: revoked is rejected, an unreachable responder is `.retryable`. Verified chains are then
    ///     remembered for 15 minutes.
    public init(
        rootCertificates: [Certificate], policy: VerificationPolicy, clock: @escaping @Sendable () -> Date = { Date() },
        cachesChains: Bool = true, ocspTransport: (any OCSPTransport)? = nil
    ) {
        self.roots = CertificateStore(rootCertificates)
        self.policy = policy
        self.clock = clock
        self.chainCache = VerifiedChainCache(capacity: cachesChains ? 32 : 0)
        self.ocspTransport = policy.validationTime == .now ? ocspTransport : nil
    }

    /// How long an online (OCSP-checked) verification of a chain is trusted, as in Apple's libraries.
    static let onlineCacheLifetime: TimeInterval = 15 * 60

    /// Verifies a notification's `signedPayload` and every JWS nested in it. Identity is *not* checked here: an
    /// authentic notification for another app is still authentic (see ``identityVerdict(for:)``).
    public func verifyNotification(_ signedPayload: String) async throws(VerificationError) -> VerifiedNotification {
        let payload = try await verify(signedPayload, as: NotificationPayload.self, validationDate: .signedDate)
        var transaction: TransactionPayload?
        var renewalInfo: RenewalInfoPayload?
        if let nested = payload.data?.signedTransactionInfo {
            transaction = try await verify(nested, as: TransactionPayload.self, validationDate: .signedDate)
        }
        if let nested = payload.data?.signedRenewalInfo {
            renewalInfo = try await verify(nested, as: RenewalInfoPayload.self, validationDate: .signedDate)
        }
        var appTransaction: AppTransactionPayload?
        if let nested = payload.appData?.signedAppTransactionInfo {
            // Apple validates app transactions at their receiptCreationDate.
            appTransaction = try await verify(nested, as: AppTransactionPayload.self, validationDate: .receiptCreationDate)
        }
        if let transaction, let renewalInfo, transaction.originalTransactionId != renewalInfo.originalTransactionId {
            throw .malformed("nested transaction and renewal info name different subscriptions")
        }
        // As Apple's libraries do: an envelope must say which app and environment it is for.
        guard let identity = payload.claimedIdentity, identity.bundleId != nil, identity.environment != nil else {
            throw .identity("the notification names no bundleId or no environment")
        }
        return VerifiedNotification(
            payload: payload, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
    }

    /// Verifies a signed transaction (a StoreKit 2 `jwsRepresentation` or a Server API item) and checks its bundle
    /// id and environment; a mismatch throws `.identity`.
    public func verifyTransaction(_ signedTransaction: String) async throws(VerificationError) -> TransactionPayload {
        let transaction = try await verify(signedTransaction, as: TransactionPayload.self, validationDate: .signedDate)
        guard transaction.bundleId != nil else { throw .identity("the transaction names no bundleId") }
        if let problem = identityProblem(bundleId: transaction.bundleId, environment: transaction.environment) {
            throw .identity(problem)
        }
        return transaction
    }

    /// Verifies a signed renewal info and checks its environment.
    public func verifyRenewalInfo(_ signedRenewalInfo: String) async throws(VerificationError) -> RenewalInfoPayload {
        let info = try await verify(signedRenewalInfo, as: RenewalInfoPayload.self, validationDate: .signedDate)
        if let problem = identityProblem(bundleId: nil, environment: info.environment) {
            throw .identity(problem)
        }
        return info
    }

    /// Whether an authentic notification is for this app and an accepted environment. The envelope decides, and
    /// nested payloads must agree with it.
    public func identityVerdict(for notification: VerifiedNotification) -> IdentityVerdict {
        guard let claimed = notification.payload.claimedIdentity else {
            // `verifyNotification` refuses these; a value built elsewhere may still lack one.
            return .ignored(reason: "notification carries no data, summary, externalPurchaseToken or appData")
        }
        if let problem = identityProblem(
            bundleId: claimed.bundleId, environment: claimed.environment, appAppleId: .some(claimed.appAppleId))
        {
            return .ignored(reason: problem)
        }
        if let transaction = notification.transaction,
            let problem = identityProblem(bundleId: transaction.bundleId, environment: transaction.environment)
        {
            return .ignored(reason: "nested transaction: \(problem)")
        }
        if let renewal = notification.renewalInfo,
            let problem = identityProblem(bundleId: nil, environment: renewal.environment)
        {
            return .ignored(reason: "nested renewal info: \(problem)")
        }
        if let app = notification.appTransaction, let problem = identityProblem(of: app) {
            return .ignored(reason: "nested app transaction: \(problem)")
        }
        return .accepted
    }

    /// The identity problem of an app transaction (its environment is `receiptType`), if any.
    func identityProblem(of app: AppTransactionPayload) -> String? {
        identityProblem(bundleId: app.bundleId, environment: app.receiptType, appAppleId: .some(app.appAppleId))
    }

    /// - Parameter appAppleId: `nil` when the payload kind has no app id (transactions, renewal infos); `.some(nil)`
    ///   when it could carry one but does not, which fails for Production as in Apple's libraries.
    func identityProblem(bundleId: String?, environment: AppStoreEnvironment?, appAppleId: Int64?? = nil) -> String? {
        if let bundleId, bundleId != policy.bundleId { return "bundle id \(bundleId) is not \(policy.bundleId)" }
        guard let environment else { return "payload names no environment" }
        guard policy.environments.contains(environment) else { return "environment \(environment) is not accepted" }
        if environment == .production, let claimed = appAppleId, claimed != policy.appAppleId {
            return "app Apple id \(claimed.map(String.init) ?? "missing") does not match the configured one"
        }
        return nil
    }

    /// The shared recipe: structure, `alg`, `x5c`, chain to a configured root at the validation time, then the raw
    /// r‖s ES256 signature over the received signing input. Before the signature is checked, only the validation
    /// date is read from the payload, and it must lie between 2000 and a day from now: nothing an untrusted payload
    /// says reaches the certificate code unchecked.
    func verify<Payload: Decodable>(
        _ text: String, as type: Payload.Type, validationDate field: ValidationDateField
    ) async throws(VerificationError) -> Payload {
        let jws = try CompactJWS(parsing: text)
        let document: PayloadDocument
        let claimedDate: Int64?
        do {
            document = try SignedDataVerifier.decoder.parse(jws.payload)
            claimedDate = try field.read(from: document)
        } catch {
            throw .malformed("payload is not a valid \(Payload.self): \(Self.summary(of: error))")
        }
        let now = clock()
        if let claimedDate {
            guard Self.plausibleSigningDates(now: now).contains(claimedDate) else {
                throw .malformed("\(field.rawValue) \(claimedDate) is not between 2000-01-01 and a day from now")
            }
        }
        let validationTime: Date
        switch policy.validationTime {
        case .now: validationTime = now
        case .signedDate: validationTime = claimedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? now
        }
        try await verifySignature(of: jws, at: validationTime)
        do {
            return try document.decode(Payload.self)
        } catch {
            throw .malformed("payload is not a valid \(Payload.self): \(Self.summary(of: error))")
        }
    }

    /// Milliseconds since 1970 from 2000-01-01 to a day after `now`: the dates a signed payload can carry.
    static func plausibleSigningDates(now: Date) -> ClosedRange<Int64> {
        946_684_800_000...(Int64(now.timeIntervalSince1970 * 1000) + 86_400_000)
    }

    /// Checks the signature of `jws` and its chain to a configured root at `validationTime`.
    private func verifySignature(of jws: CompactJWS, at validationTime: Date) async throws(VerificationError) {
        // The same header text means the same alg and x5c: a chain verified before needs only the signature check.
        let cacheKey = jws.headerSegment
        if let cached = chainCache.entry(for: cacheKey, at: validationTime, now: clock()) {
            var digest = cached.headerDigest
            digest.update(data: jws.signingInput.dropFirst(jws.headerSegment.count + 1))
            try Self.checkSignature(jws.signature, digest: digest.finalize(), key: cached.leafKey)
            return
        }

        let header = try jws.header()
        guard header.alg == "ES256" else {
            throw .malformed("alg must be ES256, found \(header.alg ?? "none")")
        }
        guard let x5c = header.x5c else { throw .malformed("header has no x5c") }
        guard x5c.count == 3 else { throw .malformed("x5c must hold 3 certificates, found \(x5c.count)") }
        let leaf = try Self.certificate(x5c[0], role: "leaf")
        let intermediate = try Self.certificate(x5c[1], role: "intermediate")
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else { throw .untrusted("leaf key is not P-256") }
        try Self.checkSignature(jws.signature, digest: SHA256.hash(data: jws.signingInput), key: leafKey)
        let requester = ocspTransport.map(RecordingOCSPRequester.init(transport:))
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
            AppleChainPolicy()
            if let requester {
                OCSPVerifierPolicy(failureMode: .hard, requester: requester, fixedExpiryValidationTime: validationTime)
            }
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            if requester?.responderWasUnreachable == true {
                throw .init(.retryable, "OCSP responder unreachable; cannot decide revocation now")
            }
            throw .untrusted("certificate chain does not validate to a trusted root at \(validationTime)")
        }
        let notBefore = chain.map(\.notValidBefore).max() ?? validationTime
        let notAfter = chain.map(\.notValidAfter).min() ?? validationTime
        if notBefore <= notAfter {
            var headerDigest = SHA256()
            headerDigest.update(data: jws.signingInput.prefix(jws.headerSegment.count + 1))
            let trustedUntil = requester == nil ? Date.distantFuture : clock().addingTimeInterval(Self.onlineCacheLifetime)
            chainCache.remember(
                .init(leafKey: leafKey, headerDigest: headerDigest, validity: notBefore...notAfter, trustedUntil: trustedUntil),
                for: cacheKey)
        }
    }

    private static func certificate(_ base64: String, role: String) throws(VerificationError) -> Certificate {
        guard let der = Data(base64Encoded: base64) else { throw .certificate("\(role) in x5c is not standard base64") }
        guard let certificate = try? Certificate(derEncoded: Array(der)) else {
            throw .certificate("\(role) in x5c is not a DER certificate")
        }
        return certificate
    }

    private static func checkSignature(
        _ rawSignature: Data, digest: SHA256Digest, key: P256.Signing.PublicKey
    ) throws(VerificationError) {
        guard rawSignature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: rawSignature)
        else {
            throw .untrusted("signature is not a 64-byte r‖s ES256 signature")
        }
        guard key.isValidSignature(signature, for: digest) else {
            throw .untrusted("signature does not match the leaf certificate")
        }
    }

    private static func summary(of error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "not JSON" }
        switch decoding {
        case .keyNotFound(let key, _): return "missing \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case .dataCorrupted: return "not JSON"
        @unknown default: return "undecodable"
        }
    }
}

/// The outcome of the identity check on an authentic notification.
public enum IdentityVerdict: Sendable, Equatable {
    case accepted
    /// Authentic but not ours (another bundle, an environment not accepted): acknowledged and counted, not applied.
    case ignored(reason: String)
}

/// The payload field whose date a chain is validated at, the only field read before the signature is checked.
enum ValidationDateField: String, Sendable {
    case signedDate
    /// App transactions: Apple validates them at their receipt's creation.
    case receiptCreationDate

    private struct SignedDate: Decodable { var signedDate: Int64? }
    private struct ReceiptCreationDate: Decodable { var receiptCreationDate: Int64? }

    func read(from document: PayloadDocument) throws -> Int64? {
        switch self {
        case .signedDate: try document.decode(SignedDate.self).signedDate
        case .receiptCreationDate: try document.decode(ReceiptCreationDate.self).receiptCreationDate
        }
    }
}
