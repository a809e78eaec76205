import AppStoreModels

extension SignedDataVerifier {
    /// Verifies the `signedPayload` of a Get Retention Message request as a notification is verified (chain to a
    /// configured root at its `signedDate`, ES256), then its identity: an accepted environment, and in Production the
    /// configured `appAppleId` — Apple: "If it doesn't match, don't respond to the request". The request names no
    /// bundle id. How old it may be is the caller's rule: Apple's verifiers do not check age.
    public func verifyRetentionRequest(_ signedPayload: String) async throws(VerificationError) -> RetentionRequestPayload {
        let request = try await verify(signedPayload, as: RetentionRequestPayload.self, validationDate: .signedDate)
        if let problem = identityProblem(bundleId: nil, environment: request.environment, appAppleId: .some(request.appAppleId)) {
            throw .identity(problem)
        }
        return request
    }
}
