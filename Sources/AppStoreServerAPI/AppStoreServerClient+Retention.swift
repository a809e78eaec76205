import AppStoreModels
import Foundation

/// The Retention Messaging API's endpoints of the realtime URL and its performance test (docs/retention.md).
extension AppStoreServerClient {
    /// What Apple measured of a Get Retention Message endpoint (`PerformanceTestResultResponse`).
    public struct RetentionPerformanceTest: Decodable, Sendable {
        public struct Config: Decodable, Sendable {
            public var maxConcurrentRequests: Int?
            public var totalRequests: Int?
            public var totalDuration: Int?
            public var responseTimeThreshold: Int?
            public var successRateThreshold: Int?
        }

        public struct ResponseTimes: Decodable, Sendable {
            public var average: Int?
            public var p50: Int?
            public var p90: Int?
            public var p95: Int?
            public var p99: Int?
        }

        public var config: Config?
        public var target: String?
        /// `PENDING`, `PASS` or `FAIL`.
        public var result: String?
        public var successRate: Int?
        public var numPending: Int?
        public var responseTimes: ResponseTimes?
        /// Failed requests by `SendAttemptResult` (`TIMED_OUT`, `TLS_ISSUE`, …).
        public var failures: [String: Int]?
    }

    /// Get Realtime URL: the Get Retention Message endpoint Apple calls in `environment`; `nil` when none is set
    /// (Apple answers 404 `RealtimeUrlNotFoundError`).
    public func retentionURL(environment: AppStoreEnvironment) async throws(AppStoreServerError) -> String? {
        struct Response: Decodable { var realtimeURL: String? }
        do {
            let response: Response = try await send(.GET, "/inApps/v1/messaging/realtime/url", environment: environment)
            return response.realtimeURL
        } catch  where error.httpStatus == 404 {
            return nil
        }
    }

    /// Configure Realtime URL: point Apple's Get Retention Message requests at `url` (https, at most 256 bytes).
    public func setRetentionURL(_ url: String, environment: AppStoreEnvironment) async throws(AppStoreServerError) {
        struct Body: Encodable { var realtimeURL: String }
        let _: Empty = try await send(.PUT, "/inApps/v1/messaging/realtime/url", body: Body(realtimeURL: url), environment: environment)
    }

    /// Delete Realtime URL: Apple stops asking (and shows the default message).
    public func deleteRetentionURL(environment: AppStoreEnvironment) async throws(AppStoreServerError) {
        let _: Empty = try await send(.DELETE, "/inApps/v1/messaging/realtime/url", environment: environment)
    }

    /// Initiate Performance Test: Apple sends requests about `originalTransactionId` to the configured URL; returns the
    /// test's id for ``retentionPerformanceTestResult(id:environment:)``.
    public func startRetentionPerformanceTest(originalTransactionId: String, environment: AppStoreEnvironment)
        async throws(AppStoreServerError) -> String
    {
        struct Body: Encodable { var originalTransactionId: String }
        struct Response: Decodable { var requestId: String? }
        let response: Response = try await send(
            .POST, "/inApps/v1/messaging/performanceTest", body: Body(originalTransactionId: originalTransactionId), environment: environment)
        guard let id = response.requestId else { throw AppStoreServerError(.invalidResponse, "Apple's answer names no requestId") }
        return id
    }

    /// Get Performance Test Results.
    public func retentionPerformanceTestResult(id: String, environment: AppStoreEnvironment) async throws(AppStoreServerError)
        -> RetentionPerformanceTest
    {
        try await send(.GET, "/inApps/v1/messaging/performanceTest/result/\(Self.escape(id))", environment: environment)
    }
}
