/// `GET /admin/jobs` (openapi `JobList`).
struct JobListAnswer: Decodable, Sendable {
    var jobs: [JobAnswer]
}

/// `GET /admin/jobs/{id}`, and each entry of a job list (openapi `Job`: fields without a value are left out).
struct JobAnswer: Decodable, Sendable {
    var id: Int64
    var kind: String
    var state: String
    var attempt: Int
    var createdAt: String
    var arguments: String
    var errors: [JobErrorAnswer]
}

/// One failed attempt of a job.
struct JobErrorAnswer: Decodable, Sendable {
    var attempt: Int
    var at: String
    var error: String
}

/// `POST /admin/jobs/requeue` (openapi `Requeued`).
struct RequeuedAnswer: Decodable, Sendable {
    var ids: [Int64]
    var count: Int
    var dryRun: Bool
}
