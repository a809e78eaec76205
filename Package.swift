// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "storekeeper",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storekeeper", targets: ["storekeeper"]),
        .executable(name: "storekeeper-bench", targets: ["storekeeper-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Codable models of Apple's payloads (notification, transaction, renewal info) and their content limits.
        .target(name: "AppStoreModels", dependencies: ["PayloadDecoding", "Entitlements"]),
        // A fast, strict, linear JSON `Decoder` for the payload models (a tape of tokens over the bytes), and
        // `JSONValue`. No dependencies.
        .target(name: "PayloadDecoding"),
        // Google Play's Real-time developer notifications and the Pub/Sub push that carries them. Store facts only.
        .target(name: "GooglePlay", dependencies: ["PayloadDecoding", "Subscriptions", "Entitlements", "AppStoreModels"]),
        // Signed-data verification: JWS + x5c chain to a configured root, Apple payload models. No I/O.
        .target(
            name: "SignedData",
            dependencies: [
                "AppStoreModels", "PayloadDecoding",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // The store-neutral entitlement core: the typed state of any source (a store's subscription or one-time
        // purchase, an operator's grant), the stored facts of grants and purchases, and the account-level rule over
        // them. Knows no store. Pure.
        .target(name: "Entitlements"),
        // The App Store's auto-renewable subscriptions: facts and lifecycle rules, pure functions of (state, event, now).
        .target(name: "Subscriptions", dependencies: ["AppStoreModels", "Entitlements"]),
        // Tier catalogue and credit arithmetic (calendar, proration, clawback, spend order), the sources' states from
        // the catalogue: pure.
        .target(name: "Credits", dependencies: ["Subscriptions", "AppStoreModels", "Entitlements"]),
        // Analytics: what each subscription adds to the daily rollups, and charts from them. Pure, like Credits.
        .target(name: "Analytics", dependencies: ["Subscriptions", "AppStoreModels", "Entitlements"]),
        // Stripe, the web store: webhook signatures, the event envelope, the objects read from its API and the pure
        // derivation of a subscription from them.
        .target(
            name: "StripeStore",
            dependencies: ["Subscriptions", "Entitlements", "AppStoreModels", .product(name: "Crypto", package: "swift-crypto")]),
        // Stripe's API client: pinned version, timeouts, retries with backoff, idempotent writes.
        .target(
            name: "StripeAPI",
            dependencies: [
                "StripeStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // An in-process Stripe written from Stripe's API reference (form bodies, expand[], pagination, the error envelope,
        // 429 with Retry-After) that signs its webhooks: tests, benchmarks and `storekeeper dev --fake-stripe`.
        .target(
            name: "StripeFake",
            dependencies: [
                "Entitlements", "StripeStore", "Credits",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        // Events for the app's services: which changes are worth one (pure rules), Standard Webhooks signatures,
        // endpoints and the retry schedule.
        .target(
            name: "Events",
            dependencies: ["Subscriptions", "Credits", "Entitlements", "AppStoreModels", .product(name: "Crypto", package: "swift-crypto")]),
        // Database statements that cannot hang: prepared statements fenced against connections that close under them,
        // and deadlines. Shared by the queue and the repositories.
        .target(
            name: "StatementFencing",
            dependencies: [
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The PostgreSQL job queue: enqueue, claim, complete, worker service.
        .target(
            name: "Jobs",
            dependencies: [
                "StatementFencing",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // App Store Server API client: ES256 tokens, endpoints, retries; signed answers verified by SignedData.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                "AppStoreModels", "SignedData",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Schema migrations and the stores of notifications and subscriptions.
        .target(
            name: "Persistence",
            dependencies: [
                "AppStoreModels", "PayloadDecoding", "Subscriptions", "Credits", "Entitlements", "StripeStore", "Events", "StatementFencing",
                "SignedData", "Analytics", "GooglePlay", "Jobs",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The use cases, one file each: accept and apply a notification, claim a transaction, derive a subscription,
        // renewal recheck, credit window reset. Each owns its transaction and enqueues through `JobScheduling`.
        .target(
            name: "Application",
            dependencies: [
                "AppStoreModels", "Subscriptions", "Credits", "Entitlements", "StripeStore", "StripeAPI", "Events", "Persistence", "Jobs",
                "AppStoreServerAPI", "Analytics", "GooglePlay", "GooglePlayAPI",
                "SignedData", "StatementFencing",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Local Apple-shaped signing chain: `dev`, `simulate`, tests and benchmarks.
        .target(
            name: "LocalSigning",
            dependencies: [
                "AppStoreModels", "Entitlements",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // The Play Developer API: service-account tokens, paced and retried calls, one error type.
        .target(
            name: "GooglePlayAPI",
            dependencies: [
                "GooglePlay", "StatementFencing",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Google, faked from its references: push tokens, its keys, Play's notifications.
        .target(
            name: "GooglePlayFake",
            dependencies: [
                "GooglePlay", "LocalSigning", "Credits",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Hostile input for the drills and tests: absurd signed content, costly JSON shapes, raw sockets that stall or
        // cut requests. Never linked into `storekeeper`.
        .target(name: "HostileInput", dependencies: ["AppStoreModels", "LocalSigning"]),
        // HTTP: Apple intake, service API, admin, health; connection limits.
        .target(
            name: "HTTPAPI",
            dependencies: [
                "AppStoreModels", "PayloadDecoding", "SignedData", "Subscriptions", "Credits", "Entitlements", "StripeStore", "StripeAPI", "Events",
                "Persistence", "Application", "Jobs", "StatementFencing", "Analytics", "GooglePlay", "GooglePlayAPI",
                "AppStoreServerAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Server/OpenAPI/openapi.json")]
        ),
        // Configuration, the apply-notification job, process assembly (serve / work / dev).
        .target(
            name: "StorekeeperRuntime",
            dependencies: [
                "AppStoreModels", "Entitlements", "SignedData", "Subscriptions", "Credits", "StripeStore", "StripeAPI", "Events", "Persistence",
                "Application", "Jobs", "StatementFencing", "HTTPAPI", "LocalSigning", "GooglePlayAPI",
                "AppStoreServerAPI", "Analytics",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "storekeeper",
            dependencies: [
                "StripeStore", "GooglePlayAPI", "StorekeeperRuntime", "SignedData", "LocalSigning", "Persistence", "Application", "Jobs",
                "StatementFencing", "HTTPAPI",
                "Subscriptions", "Credits", "Entitlements", "StripeAPI", "StripeFake", "Events",
                "AppStoreServerAPI", "AppStoreModels", "GooglePlayFake",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Benchmarks and drills: they drive the `storekeeper` built beside them as child processes.
        .executableTarget(
            name: "storekeeper-bench",
            dependencies: [
                "StorekeeperRuntime", "Analytics", "Subscriptions", "Entitlements", "HostileInput", "SignedData", "LocalSigning", "Persistence",
                "Jobs", "HTTPAPI", "StripeStore", "StripeFake", "Events",
                "AppStoreModels", "GooglePlayFake",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Scale/load.sql")]
        ),
        // Test helpers shared by the test targets (a real OCSP responder, …); only tests depend on it.
        .target(
            name: "TestSupport",
            dependencies: [
                "SignedData", "LocalSigning", "AppStoreModels", "Subscriptions",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/TestSupport"
        ),
        // A worker process for the queue's multi-process tests (kill -9, several processes, graceful shutdown).
        .executableTarget(
            name: "storekeeper-probe-worker",
            dependencies: [
                "Jobs", "StorekeeperRuntime",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ProbeWorker"
        ),
        .testTarget(
            name: "SignedDataTests",
            dependencies: [
                "SignedData", "LocalSigning", "HostileInput", "AppStoreModels", "TestSupport", "GooglePlayFake",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(name: "GooglePlayTests", dependencies: ["GooglePlay", "Subscriptions"]),
        .testTarget(name: "EntitlementsTests", dependencies: ["Entitlements"]),
        .testTarget(name: "SubscriptionsTests", dependencies: ["Subscriptions", "Entitlements", "AppStoreModels", "PayloadDecoding", "TestSupport"]),
        .testTarget(
            name: "PayloadDecodingTests", dependencies: ["LocalSigning", "PayloadDecoding", "AppStoreModels", "HostileInput", "TestSupport"]),
        .testTarget(name: "CreditsTests", dependencies: ["Credits", "Subscriptions", "Entitlements", "AppStoreModels"]),
        .testTarget(name: "StripeStoreTests", dependencies: ["StripeStore", "Subscriptions", "Credits"]),
        .testTarget(name: "AnalyticsTests", dependencies: ["Analytics", "Subscriptions", "Entitlements", "AppStoreModels"]),
        .testTarget(name: "EventsTests", dependencies: ["Events", "Credits", "Subscriptions", "Entitlements"]),
        // Scenarios as data: Scenarios/*.json, signed, verified and derived without a database.
        .testTarget(
            name: "ScenarioTests",
            dependencies: ["Subscriptions", "Credits", "Entitlements", "AppStoreModels", "SignedData", "LocalSigning", "TestSupport"],
            exclude: ["Scenarios"]),
        // The HTTP edge with no database: what the real router answers before any statement (keys, roles, unknown
        // paths and methods, malformed notifications, the served document), in milliseconds.
        .testTarget(
            name: "RouteTests",
            dependencies: [
                "StorekeeperRuntime", "LocalSigning", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        // What the integration targets share: a Storekeeper on a fresh database (StorekeeperHarness, TestDatabase), the
        // stores faked from their references, child processes, and the answers decoded into types written from the
        // contract (Answers/). Imported `@testable`: its helpers stay internal.
        .target(
            name: "IntegrationSupport",
            dependencies: [
                "AppStoreModels", "AppStoreServerAPI", "Application", "Credits", "Events", "GooglePlayFake", "Jobs", "LocalSigning", "Persistence",
                "StorekeeperRuntime", "StripeFake", "StripeStore", "Subscriptions", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/IntegrationSupport"
        ),
        // The App Store end to end on real PostgreSQL: intake, verification, lifecycle, claims, offers, retention, refunds, support.
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStoreModels", "AppStoreServerAPI", "Application", "Events", "HostileInput", "IntegrationSupport", "Jobs", "LocalSigning",
                "Persistence", "SignedData", "StorekeeperRuntime", "Subscriptions", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Credits, holds and entitlement sources on real PostgreSQL: the ledger's statements under parallel clients.
        .testTarget(
            name: "LedgerTests",
            dependencies: [
                "AppStoreModels", "Application", "Credits", "Entitlements", "Events", "HTTPAPI", "IntegrationSupport", "LocalSigning",
                "PayloadDecoding", "Persistence", "StorekeeperRuntime", "Subscriptions", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Stripe end to end: the webhook intake, the fake API from its reference, scenarios (StripeScenarios/*.json).
        .testTarget(
            name: "StripeTests",
            dependencies: [
                "AppStoreModels", "Application", "Events", "IntegrationSupport", "LocalSigning", "StripeAPI", "StripeFake", "StripeStore",
                "Subscriptions", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            exclude: ["StripeScenarios"]
        ),
        // Google Play end to end: push intake, the fake Play Developer API, scenarios (PlayScenarios/*.json).
        .testTarget(
            name: "PlayTests",
            dependencies: [
                "Application", "GooglePlay", "GooglePlayAPI", "GooglePlayFake", "IntegrationSupport", "LocalSigning", "Persistence", "Subscriptions",
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["PlayScenarios"]
        ),
        // The job queue, workers and processes, the database's behaviour (locks, outages, connection budgets), migrations.
        .testTarget(
            name: "QueueTests",
            dependencies: [
                "HTTPAPI", "HostileInput", "IntegrationSupport", "Jobs", "LocalSigning", "Persistence", "StatementFencing", "StorekeeperRuntime",
                "StripeStore", "Subscriptions", "TestSupport", "storekeeper-probe-worker", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What operators run and read: the CLI, configuration, erasure, support, roles, analytics, the dev walkthrough.
        .testTarget(
            name: "OperatorTests",
            dependencies: [
                "AppStoreModels", "Application", "Credits", "IntegrationSupport", "Jobs", "LocalSigning", "Persistence", "StorekeeperRuntime",
                "Subscriptions", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // The published contract and attacks on it: the OpenAPI document, error answers, hostile input, webhooks' wire format, the docs' tables.
        .testTarget(
            name: "ContractTests",
            dependencies: [
                "AppStoreModels", "Application", "GooglePlayFake", "HTTPAPI", "HostileInput", "IntegrationSupport", "Jobs", "LocalSigning",
                "StorekeeperRuntime", "StripeStore", "Subscriptions", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ]
)

// Our code builds without warnings: each is an error, so none is left for later (other packages' are SwiftPM's to quiet).
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
