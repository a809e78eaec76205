/// `POST /notifications/apple` (SPEC §5.1; openapi `IntakeAnswer`).
struct IntakeAnswer: Decodable, Sendable {
    var status: String
    var notificationUUID: String
    var reason: String?
}

/// `POST /stripe/webhooks` (openapi `StripeIntakeAnswer`).
struct StripeIntakeAnswer: Decodable, Sendable {
    var status: String
    var eventId: String
}

/// `POST /notifications/google` (openapi `GoogleIntakeAnswer`).
struct GoogleIntakeAnswer: Decodable, Sendable {
    var status: String
    var messageId: String
}
