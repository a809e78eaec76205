import AppStoreModels

/// What a verified payload must claim to be accepted, and at what instant certificates must be valid.
public struct VerificationPolicy: Sendable, Equatable {
    /// The instant certificate validity is checked at.
    public enum ValidationTime: Sendable, Equatable {
        /// The payload's own `signedDate` (Apple's offline default): archived and retried payloads keep verifying
        /// after their leaf expires.
        case signedDate
        /// The current time (online mode).
        case now
    }

    public var bundleId: String
    /// Required to accept Production payloads; checked only for Production.
    public var appAppleId: Int64?
    public var environments: Set<AppStoreEnvironment>
    public var validationTime: ValidationTime

    public init(
        bundleId: String, appAppleId: Int64?, environments: Set<AppStoreEnvironment>,
        validationTime: ValidationTime = .signedDate
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.validationTime = validationTime
    }
}
