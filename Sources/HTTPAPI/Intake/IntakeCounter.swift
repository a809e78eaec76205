import Metrics

/// Counts a store intake's answers by status: `accepted`, `duplicate`, `ignored`, or the error code answered
/// (`storekeeper_stripe_intake_events_total{status}`, `storekeeper_google_intake_notifications_total{status}`).
struct IntakeCounter: Sendable {
    let label: String

    /// Runs the intake's handler and counts what it answered; `refused` sees every error answered.
    func counting<Answer>(
        _ status: (Answer) -> String, refused: (APIError) -> Void = { _ in }, _ handler: () async throws -> Answer
    ) async throws -> Answer {
        do {
            let answer = try await handler()
            count(status(answer))
            return answer
        } catch let error as APIError {
            count(error.code.description)
            refused(error)
            throw error
        }
    }

    func count(_ status: String) {
        Counter(label: label, dimensions: [("status", status)]).increment()
    }
}
