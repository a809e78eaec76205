import Application
import Foundation
import Hummingbird
import Jobs

/// The admin API (`STOREKEEPER_ADMIN_KEYS`): JSON equivalents of `storekeeper jobs …`.
public struct AdminController: Sendable {
    let jobs: PostgresJobQueue

    public init(jobs: PostgresJobQueue) { self.jobs = jobs }

    struct JobList: ResponseEncodable { var jobs: [JobRecord] }
    struct Requeued: ResponseEncodable, Encodable {
        var ids: [Int64]
        var count: Int
        var dryRun: Bool
    }
    struct Cancelled: ResponseEncodable { var id: Int64 }
    struct RequeueRequest: Codable {
        var ids: [Int64]?
        var state: String?
        var kind: String?
        var since: String?
        var dryRun: Bool?
    }

    /// A job kind is a short printable name; anything else (a NUL byte, kilobytes) is refused before the database.
    static func requireJobKind(_ kind: String) throws {
        guard kind.isKey(maximumBytes: 128) else { throw APIError.badRequest("kind must be 1–128 printable characters") }
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("stats") { _, _ in try await withDatabase { try await self.jobs.statistics() } }
        group.get("jobs") { request, _ -> JobList in
            let text = request.uri.queryParameters.get("state")
            let state = text.flatMap { JobState(rawValue: String($0)) }
            if text != nil, state == nil { throw APIError.badRequest("state must be one of \(JobState.list())") }
            let limit = try EventsController.limit(request.uri.queryParameters.get("limit"), default: 50)
            let kind = request.uri.queryParameters.get("kind")
            if let kind { try Self.requireJobKind(kind) }
            return JobList(jobs: try await withDatabase { try await self.jobs.jobs(state: state, kind: kind, limit: limit) })
        }
        group.get("jobs/{id}") { _, context -> JobRecord in
            guard let id = Int64(try context.parameters.require("id")) else { throw APIError.badRequest("job id must be a number") }
            guard let record = try await withDatabase({ try await self.jobs.job(id: id) }) else {
                throw APIError(.notFound, code: .notFound, message: "no job \(id)")
            }
            return record
        }
        group.post("jobs/requeue") { request, context -> Requeued in
            let usage = #"body must be {"ids": [...]} or {"state": "failed", "kind": ..., "since": "<RFC 3339 time>", "dryRun": ...}"#
            let requeue = try await request.decodeJSONBody(as: RequeueRequest.self, upTo: 64 * 1024, otherwise: usage)
            if let kind = requeue.kind { try Self.requireJobKind(kind) }
            var since: Date?
            if let text = requeue.since {
                guard let date = RFC3339.date(text) else { throw APIError.badRequest(usage) }
                since = date
            }
            if let ids = requeue.ids {
                let done = try await withDatabase { try await self.jobs.requeue(ids: ids) }
                return Self.noted(Requeued(ids: done, count: done.count, dryRun: false), asked: requeue)
            }
            guard let state = JobState(rawValue: requeue.state ?? "failed"), JobState.requeueable.contains(state) else {
                throw APIError.badRequest("only failed or cancelled jobs can be requeued")
            }
            let dryRun = requeue.dryRun ?? false
            let (kind, after) = (requeue.kind, since)
            let ids = try await withDatabase { try await self.jobs.requeue(state: state, kind: kind, since: after, dryRun: dryRun) }
            return Self.noted(Requeued(ids: ids, count: ids.count, dryRun: dryRun), asked: requeue)
        }
        group.post("jobs/{id}/cancel") { _, context -> Cancelled in
            guard let id = Int64(try context.parameters.require("id")) else { throw APIError.badRequest("job id must be a number") }
            guard try await withDatabase({ try await self.jobs.cancel(ids: [id]) }) == [id] else {
                throw APIError(.conflict, code: .notCancellable, message: "job \(id) is not waiting to run (only available jobs can be cancelled)")
            }
            OperatorAudit.note(
                "job.cancel", target: String(id), before: ["state": JobState.available.rawValue], after: ["state": JobState.cancelled.rawValue])
            return Cancelled(id: id)
        }
    }

    /// Notes a requeue for the audit log — what was asked and which jobs moved — unless it moved none (a dry run
    /// still names the jobs it would have moved, and is kept: someone looked).
    static func noted(_ requeued: Requeued, asked: RequeueRequest) -> Requeued {
        guard requeued.count > 0 || requeued.dryRun else {
            OperatorAudit.unchanged()
            return requeued
        }
        let target = requeued.ids.count == 1 ? String(requeued.ids[0]) : nil
        OperatorAudit.note(requeued.dryRun ? "jobs.requeue.dry-run" : "jobs.requeue", target: target, before: asked, after: requeued)
        return requeued
    }
}

extension QueueStatistics: ResponseEncodable {}
extension JobRecord: ResponseEncodable {}
