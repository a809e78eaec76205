import ArgumentParser
import Foundation
import NIOCore
import StorekeeperRuntime

/// Status reads, spends and Apple notifications at fixed rates, open loop, all at once: what a live install serves while
/// its operator upgrades it or backs it up. Every request is made before the run (notifications signed, spends keyed
/// `drill-spend-<n>`), so the same requests can be sent again — as clients retry and Apple redelivers.
struct MixedTraffic {
    var statusRate: Int
    var spendRate: Int
    var notificationRate: Int
    var seconds: Int
    var connections: Int

    /// The requests of each stream, in the order they go out: request i of a stream is due `i / rate` seconds after the
    /// run starts (the first second is a warm-up, sent but not measured).
    struct Requests: Sendable {
        var status: [LoadRequest]
        var spends: [LoadRequest]
        var notifications: [LoadRequest]
        /// The accounts the notifications subscribe.
        var subscribed: [String]
    }

    /// What each stream measured.
    struct Streams {
        var status: LoadPhase
        var spends: LoadPhase
        var notifications: LoadPhase

        var all: [(name: String, phase: LoadPhase)] { [("status reads", status), ("spends", spends), ("notifications", notifications)] }
    }

    /// The drills' options for the install they load and the traffic they send.
    struct Options: ParsableArguments {
        @Option(help: "Generated subscribers loaded first.") var subscribers = 100_000
        @Option(help: "Status reads a second.") var statusRate = 200
        @Option(help: "Spends a second.") var spendRate = 100
        @Option(help: "New subscriptions (Apple notifications) a second.") var notificationRate = 50
        @Option(help: "Concurrent connections per stream (open loop uses twice as many).") var connections = 4
        @Option(help: "The tier catalogue the generated products come from.") var tiers = "config/tiers.yml"

        func validate() throws {
            guard FileManager.default.fileExists(atPath: tiers) else {
                throw ValidationError("--tiers \(tiers): no such file (run from the repository)")
            }
            guard (0...10_000_000).contains(subscribers), statusRate > 0, spendRate > 0, notificationRate > 0, connections > 0 else {
                throw ValidationError("--subscribers must be 0 to 10,000,000; rates and --connections positive")
            }
        }

        /// The processes' configuration: the catalogue the generator sells from.
        var environment: [String: String] { ["STOREKEEPER_TIERS": URL(fileURLWithPath: tiers).standardizedFileURL.path] }

        func traffic(seconds: Int) -> MixedTraffic {
            MixedTraffic(
                statusRate: statusRate, spendRate: spendRate, notificationRate: notificationRate, seconds: seconds, connections: connections)
        }
    }

    /// How many requests a stream at `rate` sends (``HotPathLoad/pace(_:rate:reference:_:)``: `seconds` and a warm-up second).
    func count(rate: Int) -> Int { rate * (seconds + 1) }

    func requests(_ system: SystemUnderTest, accounts: [String], notificationsFrom first: Int) throws -> Requests {
        let key = [("Authorization", "Bearer bench")]
        let status = (0..<count(rate: statusRate)).map { index in
            LoadRequest(path: "/v1/accounts/\(accounts[index % accounts.count])/status", method: .GET, headers: key)
        }
        let spends = (0..<count(rate: spendRate)).map { index in
            LoadRequest(
                path: "/v1/accounts/\(accounts[index % accounts.count])/usage", method: .POST,
                headers: key + [("Content-Type", "application/json")],
                body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "drill-spend-\#(index)"}"#))
        }
        let started = Date()
        var subscribed: [String] = []
        let notifications = try (0..<count(rate: notificationRate)).map { index in
            let account = UUID()
            subscribed.append(account.uuidString.lowercased())
            let body = try system.subscribe(first + index, account: account, at: started.addingTimeInterval(Double(index) / 1000)).body
            return LoadRequest(
                path: "/notifications/apple", method: .POST, headers: [("Content-Type", "application/json")], body: body)
        }
        return Requests(status: status, spends: spends, notifications: notifications, subscribed: subscribed)
    }

    /// Sends the three streams at once, each at its rate, and returns what each measured.
    func run(_ system: SystemUnderTest, _ requests: Requests) async throws -> Streams {
        let load = HotPathLoad(connections: connections, seconds: seconds)
        async let status = load.pace(system, rate: statusRate) { requests.status[$0] }
        async let spends = load.pace(system, rate: spendRate) { requests.spends[$0] }
        async let notifications = load.pace(system, rate: notificationRate) { requests.notifications[$0] }
        return try await Streams(status: status, spends: spends, notifications: notifications)
    }

    /// The spends and notifications due from `offset` after the run started on, sent again as fast as answered.
    func sendAgain(_ system: SystemUnderTest, _ requests: Requests, from offset: Double) async throws -> SystemUnderTest.SendPhase {
        let host = "127.0.0.1:\(system.port)"
        let spends = requests.spends.dropFirst(max(0, Int(offset * Double(spendRate))))
        let notifications = requests.notifications.dropFirst(max(0, Int(offset * Double(notificationRate))))
        return try await system.send(requests: (spends + notifications).map { $0.bytes(host: host) }, clients: connections, rate: nil)
    }
}

extension LoadPhase {
    /// The longest any answer took, in milliseconds.
    var longest: Double { latencies.max() ?? 0 }
}
