import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Jobs
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

@Suite("Admin dashboard and metrics, on real PostgreSQL")
struct OperationsTests {
    static let adminKey = "test-admin-key"
    static var basic: String { "Basic " + Data("admin:\(adminKey)".utf8).base64EncodedString() }

    struct Empty: Codable {}

    @Test("the dashboard: sign-in, queue, failed jobs with a requeue button (same-origin only), notifications, account lookup")
    func dashboard() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            // A failed job of a kind no worker runs, as an operator would find it.
            let failedId = try await harness.count(
                #"INSERT INTO jobs (kind, state, attempt, max_attempts, attempt_budget, errors) VALUES ('demo-export', 'failed', 1, 1, 1, '[{"attempt": 1, "at": "2026-11-21T10:00:00Z", "error": "S3 said <AccessDenied>"}]') RETURNING id"#
            )
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)

                let anonymous = try await client.execute(uri: "/admin", method: .get)
                #expect(anonymous.status == .unauthorized)
                #expect(anonymous.headers[.wwwAuthenticate]?.hasPrefix("Basic realm=") == true)
                #expect(
                    try await client.execute(
                        uri: "/admin", method: .get, headers: [.authorization: "Basic " + Data("admin:nope".utf8).base64EncodedString()]
                    ).status == .unauthorized)

                let page = try await client.execute(uri: "/admin?account=\(account)", method: .get, headers: [.authorization: Self.basic])
                #expect(page.status == .ok)
                #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
                let html = String(buffer: page.body)
                for needle in [
                    "<h2>Queue</h2>", "Failed jobs", "demo-export", "S3 said &lt;AccessDenied&gt;", "action=\"/admin/jobs/\(failedId)/requeue\"",
                    "Recent notifications", "SUBSCRIBED/INITIAL_BUY", "<b>subscribed</b>", "tier pro", "+1000", "grant:",
                ] {
                    #expect(html.contains(needle), "missing \(needle)")
                }
                #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))

                let bad = String(
                    buffer: try await client.execute(uri: "/admin?account=%3Cscript%3E", method: .get, headers: [.authorization: Self.basic]).body)
                // Any text is an account id the app may use: looked up, and always escaped.
                #expect(bad.contains("&lt;script&gt;") && !bad.contains("<script>"))

                let crossSite = try await client.execute(
                    uri: "/admin/jobs/\(failedId)/requeue", method: .post,
                    headers: [.authorization: Self.basic, .origin: "https://evil.example", .init("Sec-Fetch-Site")!: "cross-site"])
                #expect(crossSite.status == .forbidden)
                let requeue = try await client.execute(
                    uri: "/admin/jobs/\(failedId)/requeue", method: .post,
                    headers: [.authorization: Self.basic, .init("Sec-Fetch-Site")!: "same-origin"])
                #expect(requeue.status == .seeOther)
                #expect(requeue.headers[.location] == "/admin?requeued=1")
                #expect(try await harness.count("SELECT max_attempts FROM jobs WHERE id = \(failedId)") == 2)
            }
        }
    }

    @Test("every answer is counted and timed by route, method and status, HEAD's too; a method HTTP does not define is counted as _OTHER")
    func requestMetrics() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                // The series are the process's (other tests answer too): what a request adds is asserted as growth, on
                // series few other tests feed — HEAD of the status, a refused notification.
                func value(_ family: String, _ labels: String...) async throws -> Double {
                    let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                    return text.split(separator: "\n").filter { $0.hasPrefix(family + "{") && labels.allSatisfy($0.contains) }
                        .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
                }
                let statusRoute = #"http_route="/v1/accounts/{accountId}/status""#
                let (head, ok) = (#"http_request_method="HEAD""#, #"http_response_status_code="200""#)
                let intake = #"http_route="/notifications/apple""#
                let (post, refused) = (#"http_request_method="POST""#, #"http_response_status_code="400""#)
                let before = (
                    requests: try await value("hb_requests", statusRoute, head, ok),
                    timed: try await value("http_server_request_duration_count", statusRoute, head, ok),
                    refusals: try await value("hb_requests", intake, post, refused),
                    errors: try await value("hb_request_errors", intake, #"error_type="400""#)
                )
                let status = try await client.execute(
                    uri: "/v1/accounts/\(UUID())/status", method: .head, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                #expect(status.status == .ok)
                #expect(try await client.postNotification(Data("{}".utf8)).status == .badRequest)
                _ = try await client.execute(uri: "/healthz", method: HTTPRequest.Method("BREW")!)
                // HEAD's answer is its GET's with the body dropped: counted and timed all the same.
                #expect(try await value("hb_requests", statusRoute, head, ok) >= before.requests + 1)
                #expect(try await value("http_server_request_duration_count", statusRoute, head, ok) >= before.timed + 1)
                // An answer thrown as an error (outside the route groups, which answer their errors themselves) is
                // counted as one, under its status.
                #expect(try await value("hb_requests", intake, post, refused) >= before.refusals + 1)
                #expect(try await value("hb_request_errors", intake, #"error_type="400""#) >= before.errors + 1)
                // All but HTTP's own methods share one series.
                #expect(try await value("hb_requests", #"http_request_method="_OTHER""#) >= 1)
                let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(!text.contains("BREW"), "a method other than HTTP's own became a series of its own")
            }
        }
    }

    @Test("GET /metrics exposes intake, verification, commit group, queue, job, credit and status-read families")
    func metrics() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                try await flow.send(.subscribe)
                _ = try await client.postNotification(Data("{}".utf8))
                let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                for family in [
                    #"storekeeper_intake_notifications_total{status="accepted"}"#, #"storekeeper_intake_notifications_total{status="bad_request"}"#,
                    "storekeeper_verification_duration_seconds_bucket", "storekeeper_queue_jobs", "storekeeper_queue_oldest_runnable_seconds",
                    #"storekeeper_jobs_total{kind="apply-notification",outcome="completed"}"#, "storekeeper_job_duration_seconds_bucket",
                    #"storekeeper_credit_operations_total{operation="grant"}"#, "storekeeper_database_up 1", "hb_requests",
                    // The names only: the series exist once the groups are built (CommitGroupMetricsTests checks what
                    // they record).
                    #"storekeeper_commit_group_wait_seconds_bucket{group="notifications""#,
                    #"storekeeper_commit_group_duration_seconds_count{group="notifications"}"#,
                    #"storekeeper_commit_group_size_sum{group="notifications"}"#,
                ] {
                    #expect(text.contains(family), "missing \(family)")
                }
                // Status reads are counted by where they were answered from (the counters are the process's: other
                // tests read too, so only growth is asserted).
                func statusReads() async throws -> Int {
                    let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                    return text.split(separator: "\n").filter { $0.hasPrefix("storekeeper_status_reads_total{source=") }
                        .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0) { $0 + Int($1) }
                }
                let before = try await statusReads()
                _ = try await flow.status()
                _ = try await flow.status()
                #expect(try await statusReads() >= before + 2)
                let after = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(after.contains(#"storekeeper_status_reads_total{source="database"}"#))
            }
        }
    }
}
