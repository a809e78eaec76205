import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the long-lived processes: `serve`, `work`, or both (`dev`) in one service group that shuts down gracefully
/// on SIGTERM/SIGINT — the HTTP server stops accepting first, workers finish in-flight jobs, the database pool closes
/// last.
public enum StorekeeperProcess {
    public struct Roles: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let serve = Roles(rawValue: 1)
        public static let work = Roles(rawValue: 2)
    }

    /// Runs until a shutdown signal. `onServerRunning` receives the bound port.
    public static func run(
        _ components: StorekeeperComponents, roles: Roles,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let logger = components.logger
        if components.serverAPI == nil {
            logger.notice(
                "App Store Server API credentials (STOREKEEPER_ASSA_*) are not set: late-renewal rechecks, notification catch-up and backfill are off; access still ends by the clock"
            )
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: DatabasePoolService(running: await components.client.startRunning(), logger: logger)),
            .init(service: ConnectionBudgetCheck(client: components.client, pool: components.configuration.databaseConnections, logger: logger)),
            // A login the database refuses for good ends the process with the reason; one not answered yet is waited for.
            .init(service: DatabaseLoginCheck(url: components.databaseURL, logger: logger), failureTerminationBehavior: .gracefullyShutdownGroup),
        ]
        // The erasure key, checked at start and while the process runs; a key that differs ends the process gracefully
        // (its answers and jobs in flight finish), with the reason.
        let erasureKey = ErasureKeyCheck(client: components.client, erased: components.erased, clock: components.clock, logger: logger)
        services.append(.init(service: erasureKey, failureTerminationBehavior: .gracefullyShutdownGroup))
        if roles.contains(.work) {
            // The worker claims nothing before the key is confirmed.
            services.append(
                .init(
                    service: AfterErasureKeyCheck(check: erasureKey, service: components.worker()),
                    failureTerminationBehavior: .gracefullyShutdownGroup))
            if !roles.contains(.serve), let port = components.configuration.metricsPort {
                services.append(.init(service: components.metricsApplication(port: port)))
            }
        }
        if roles.contains(.serve) {
            if let replica = components.replica, let tracker = components.replicaPositionTracker() {
                services.append(.init(service: DatabasePoolService(running: await replica.startRunning(), logger: logger)))
                if let login = components.replicaLoginCheck() { services.append(.init(service: login)) }
                // The replica has its own max_connections and its own clients (other serves, reports): the primary's
                // check sees neither.
                services.append(
                    .init(
                        service: ConnectionBudgetCheck(
                            client: replica, pool: components.configuration.databaseConnections, server: "the read replica (STOREKEEPER_REPLICA_URL)",
                            logger: logger)))
                services.append(.init(service: tracker))
            }
            services.append(.init(service: components.accountChangeListener()))
            services.append(.init(service: try components.application(onServerRunning: onServerRunning)))
        }
        var configuration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(30)
        let group = ServiceGroup(configuration: configuration)
        try await group.run()
    }
}
