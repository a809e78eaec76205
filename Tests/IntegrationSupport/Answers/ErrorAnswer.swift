/// The error body every endpoint answers with (SPEC §5 "Errors are JSON"; openapi `Error`).
struct ErrorAnswer: Decodable, Sendable {
    var error: String
    var message: String
}
