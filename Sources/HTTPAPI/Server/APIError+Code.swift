extension APIError {
    /// The machine-readable code of an error answer (`{"error": "<code>"}`): every one Storekeeper answers, each
    /// documented in `docs/openapi.json` (`OpenAPITests` checks that every case appears there). A struct over a
    /// private enum, as postgres-nio's `PSQLError.Code`: a new code is a new case here, never a string at a call site.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: String, CaseIterable, Sendable {
            case alreadyAnswered = "already_answered"
            case alreadyEntitled = "already_entitled"
            case amountOverHold = "amount_over_hold"
            case appleRefused = "apple_refused"
            case appleUnavailable = "apple_unavailable"
            case badRequest = "bad_request"
            case busy = "busy"
            case changeInPortal = "change_in_portal"
            case crossSite = "cross_site"
            case erasureFailed = "erasure_failed"
            case erasureKeyDiffers = "erasure_key_differs"
            case forbidden = "forbidden"
            case foreignAppAccountToken = "foreign_app_account_token"
            case googleError = "google_error"
            case holdEnded = "hold_ended"
            case idempotencyKeyReused = "idempotency_key_reused"
            case insufficientCredits = "insufficient_credits"
            case internalError = "internal_error"
            case invalidAmount = "invalid_amount"
            case invalidAnswer = "invalid_answer"
            case invalidExpiresIn = "invalid_expires_in"
            case invalidIdempotencyKey = "invalid_idempotency_key"
            case linkedElsewhere = "linked_elsewhere"
            case malformedSignature = "malformed_signature"
            case malformedSignedPayload = "malformed_signed_payload"
            case malformedSignedTransaction = "malformed_signed_transaction"
            case methodNotAllowed = "method_not_allowed"
            case missingIdempotencyKey = "missing_idempotency_key"
            case noCustomer = "no_customer"
            case noRetentionMessage = "no_retention_message"
            case notASubscription = "not_a_subscription"
            case notAudited = "not_audited"
            case notAvailable = "not_available"
            case notCancellable = "not_cancellable"
            case notConfigured = "not_configured"
            case notEligible = "not_eligible"
            case notEnoughCredits = "not_enough_credits"
            case notFound = "not_found"
            case notReady = "not_ready"
            case notSpent = "not_spent"
            case payloadTooLarge = "payload_too_large"
            case productMismatch = "product_mismatch"
            case purchaseNotFound = "purchase_not_found"
            case purchaseOwnedElsewhere = "purchase_owned_elsewhere"
            case rateLimited = "rate_limited"
            case rejectedContent = "rejected_content"
            case replayedRequest = "replayed_request"
            case requestIdentifierTaken = "request_identifier_taken"
            case reversalWindowPassed = "reversal_window_passed"
            case staleRequest = "stale_request"
            case stripeError = "stripe_error"
            case unauthorized = "unauthorized"
            case unavailable = "unavailable"
            case unknownMeter = "unknown_meter"
            case unknownProduct = "unknown_product"
            case unsupportedMediaType = "unsupported_media_type"
            case verificationFailed = "verification_failed"
            case verificationUnavailable = "verification_unavailable"
        }

        let base: Base

        private init(_ base: Base) { self.base = base }

        public static let alreadyAnswered = Code(.alreadyAnswered)
        public static let alreadyEntitled = Code(.alreadyEntitled)
        public static let amountOverHold = Code(.amountOverHold)
        public static let appleRefused = Code(.appleRefused)
        public static let appleUnavailable = Code(.appleUnavailable)
        public static let badRequest = Code(.badRequest)
        public static let busy = Code(.busy)
        public static let changeInPortal = Code(.changeInPortal)
        public static let crossSite = Code(.crossSite)
        public static let erasureFailed = Code(.erasureFailed)
        public static let erasureKeyDiffers = Code(.erasureKeyDiffers)
        public static let forbidden = Code(.forbidden)
        public static let foreignAppAccountToken = Code(.foreignAppAccountToken)
        public static let googleError = Code(.googleError)
        public static let holdEnded = Code(.holdEnded)
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)
        public static let insufficientCredits = Code(.insufficientCredits)
        public static let internalError = Code(.internalError)
        public static let invalidAmount = Code(.invalidAmount)
        public static let invalidAnswer = Code(.invalidAnswer)
        public static let invalidExpiresIn = Code(.invalidExpiresIn)
        public static let invalidIdempotencyKey = Code(.invalidIdempotencyKey)
        public static let linkedElsewhere = Code(.linkedElsewhere)
        public static let malformedSignature = Code(.malformedSignature)
        public static let malformedSignedPayload = Code(.malformedSignedPayload)
        public static let malformedSignedTransaction = Code(.malformedSignedTransaction)
        public static let methodNotAllowed = Code(.methodNotAllowed)
        public static let missingIdempotencyKey = Code(.missingIdempotencyKey)
        public static let noCustomer = Code(.noCustomer)
        public static let noRetentionMessage = Code(.noRetentionMessage)
        public static let notASubscription = Code(.notASubscription)
        public static let notAudited = Code(.notAudited)
        public static let notAvailable = Code(.notAvailable)
        public static let notCancellable = Code(.notCancellable)
        public static let notConfigured = Code(.notConfigured)
        public static let notEligible = Code(.notEligible)
        public static let notEnoughCredits = Code(.notEnoughCredits)
        public static let notFound = Code(.notFound)
        public static let notReady = Code(.notReady)
        public static let notSpent = Code(.notSpent)
        public static let payloadTooLarge = Code(.payloadTooLarge)
        public static let productMismatch = Code(.productMismatch)
        public static let purchaseNotFound = Code(.purchaseNotFound)
        public static let purchaseOwnedElsewhere = Code(.purchaseOwnedElsewhere)
        public static let rateLimited = Code(.rateLimited)
        public static let rejectedContent = Code(.rejectedContent)
        public static let replayedRequest = Code(.replayedRequest)
        public static let requestIdentifierTaken = Code(.requestIdentifierTaken)
        public static let reversalWindowPassed = Code(.reversalWindowPassed)
        public static let staleRequest = Code(.staleRequest)
        public static let stripeError = Code(.stripeError)
        public static let unauthorized = Code(.unauthorized)
        public static let unavailable = Code(.unavailable)
        public static let unknownMeter = Code(.unknownMeter)
        public static let unknownProduct = Code(.unknownProduct)
        public static let unsupportedMediaType = Code(.unsupportedMediaType)
        public static let verificationFailed = Code(.verificationFailed)
        public static let verificationUnavailable = Code(.verificationUnavailable)

        /// Every code, for the document's check.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        public var description: String { base.rawValue }
    }
}
