import ArgumentParser
import Foundation
import Logging
import StorekeeperRuntime

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the HTTP intake, service API and health endpoints.")

    func run() async throws {
        let configuration = try StorekeeperConfiguration.load(environment: ProcessInfo.processInfo.environment)
        bootstrapLogging(format: configuration.logFormat)
        let components = try StorekeeperComponents(
            configuration: configuration, databaseThread: true, applicationName: "storekeeper-serve", logger: Logger(label: "storekeeper.serve"))
        try await StorekeeperProcess.run(components, roles: .serve)
    }
}

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work", abstract: "Claim and run jobs: apply notifications, and the rest of the queue.")

    func run() async throws {
        let configuration = try StorekeeperConfiguration.load(environment: ProcessInfo.processInfo.environment)
        bootstrapLogging(format: configuration.logFormat)
        let logger = Logger(label: "storekeeper.work")
        if !ProcessPriority.lower(toNice: configuration.workerNice).isEmpty {
            logger.warning("could not lower the CPU priority", metadata: ["nice": "\(configuration.workerNice)"])
        }
        let components = try StorekeeperComponents(configuration: configuration, applicationName: "storekeeper-work", logger: logger)
        let priority = Task { await ProcessPriority.hold(nice: configuration.workerNice) }
        defer { priority.cancel() }
        try await StorekeeperProcess.run(components, roles: .work)
    }
}
