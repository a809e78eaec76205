import Foundation
import Hummingbird
import Jobs
import StatementFencing

/// Answers whether the process can serve: database reachable and schema current. A protocol because the answer is
/// `StorekeeperRuntime`'s (`PostgresReadiness`, which knows the migrations), a layer above this one.
public protocol ReadinessChecking: Sendable {
    /// `nil` when ready, otherwise why not.
    func unreadiness() async -> String?
}

/// `GET /healthz` (the process is up) and `GET /readyz` (database reachable, migrations current).
public struct HealthController: Sendable {
    let readiness: any ReadinessChecking

    public init(readiness: any ReadinessChecking) { self.readiness = readiness }

    struct Answer: ResponseEncodable {
        var status: String
    }

    public func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.get("/healthz") { _, _ in Answer(status: "ok") }
        router.get("/readyz") { _, _ -> Answer in
            let answer: String?? = try? await withDeadline(.seconds(3)) { await readiness.unreadiness() }
            if let problem = answer ?? "database did not answer within 3 s" {
                throw APIError(.serviceUnavailable, code: .notReady, message: problem)
            }
            return Answer(status: "ready")
        }
    }
}
