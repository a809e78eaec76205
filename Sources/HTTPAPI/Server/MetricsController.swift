import Application
import Foundation
import Hummingbird
import Jobs
import Metrics
import NIOCore
import Persistence
import Prometheus
import StatementFencing
import Synchronization

/// `GET /metrics` in Prometheus text format: everything the process recorded (intake, verification latency, jobs,
/// credit operations, HTTP requests) plus the queue's depth by kind and state and the oldest runnable job's age, read
/// from the database at scrape time (`storekeeper_queue_jobs{kind,state}`, `storekeeper_queue_oldest_runnable_seconds`),
/// and webhook deliveries by state with the age of the oldest event not delivered yet
/// (`storekeeper_webhook_deliveries{state}`, `storekeeper_webhook_oldest_undelivered_seconds`), and the Play purchases
/// granted more than a day ago and not acknowledged yet (`storekeeper_google_unacknowledged_purchases`).
public final class MetricsController: Sendable {
    let registry: PrometheusCollectorRegistry
    let jobs: PostgresJobQueue?
    let deliveries: EventHistory?
    /// Play purchases waiting for their acknowledgement (`storekeeper_google_unacknowledged_purchases`).
    let acknowledgements: GoogleAcknowledgements?
    /// Label pairs reported before, so a pair that emptied reads 0 instead of its last value.
    private let reported = Mutex<Set<[String]>>([])

    /// - Parameters:
    ///   - jobs: where queue depth comes from.
    ///   - kinds: job kinds reported (as 0) even while none is queued.
    ///   - deliveries: where webhook delivery counts and the oldest undelivered event come from.
    public init(
        registry: PrometheusCollectorRegistry, jobs: PostgresJobQueue?, kinds: [String] = [],
        deliveries: EventHistory? = nil, acknowledgements: GoogleAcknowledgements? = nil
    ) {
        self.acknowledgements = acknowledgements
        self.registry = registry
        self.deliveries = deliveries
        self.jobs = jobs
        reported.withLock { reported in
            for kind in kinds {
                for state in JobState.live { reported.insert([kind, state.rawValue]) }
            }
        }
    }

    /// Adds `GET /metrics`, behind a bearer key when `keys` is not empty.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>, keys: [String] = []) {
        if keys.isEmpty {
            router.get("/metrics") { _, _ in try await self.scrape() }
        } else {
            router.group().add(middleware: BearerKeyMiddleware(keys: keys)).get("/metrics") { _, _ in try await self.scrape() }
        }
    }

    static var queueJobs: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "storekeeper", metricName: "queue_jobs", unitName: "", helpText: "Jobs in the queue by kind and state.")
    }
    static var oldestRunnable: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "storekeeper", metricName: "queue_oldest_runnable", unitName: "seconds",
            helpText: "Age of the oldest job that could run now.")
    }
    static var databaseUp: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "storekeeper", metricName: "database_up", unitName: "", helpText: "1 when the last scrape could read the queue.")
    }

    func scrape() async throws -> Response {
        if let jobs {
            do {
                let statistics = try await withDeadline(.seconds(3)) { try await jobs.statistics() }
                let current = Set(statistics.counts.map { [$0.kind, $0.state.rawValue] })
                let all = reported.withLock { reported in
                    reported.formUnion(current)
                    return reported
                }
                for labels in all {
                    let count = statistics.counts.first { [$0.kind, $0.state.rawValue] == labels }?.count ?? 0
                    registry.makeGauge(descriptor: Self.queueJobs, labels: [("kind", labels[0]), ("state", labels[1])]).set(Double(count))
                }
                registry.makeGauge(descriptor: Self.oldestRunnable).set(statistics.oldestRunnableAgeSeconds ?? 0)
                registry.makeGauge(descriptor: Self.databaseUp).set(Double(1))
            } catch {
                registry.makeGauge(descriptor: Self.databaseUp).set(Double(0))
            }
        }
        if let deliveries, let summary = try? await withDeadline(.seconds(3), { try await deliveries.deliverySummary() }) {
            for state in [WebhookDeliveries.State.pending, .delivered, .failed] {
                Gauge(label: "storekeeper_webhook_deliveries", dimensions: [("state", state.rawValue)]).record(summary.counts[state] ?? 0)
            }
            let age = summary.oldestPending.map { max(0, Date().timeIntervalSince($0)) } ?? 0
            Gauge(label: "storekeeper_webhook_oldest_undelivered_seconds").record(age)
        }
        if let acknowledgements, let late = try? await withDeadline(.seconds(3), { try await acknowledgements.late(limit: 1) }) {
            // Google refunds what is not acknowledged within three days: more than zero here for long is an outage.
            Gauge(label: "storekeeper_google_unacknowledged_purchases").record(late.count)
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
    }
}
