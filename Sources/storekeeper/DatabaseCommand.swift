import Credits
import Foundation
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime

/// The database of the operator commands: `DATABASE_URL`, or — unset, in a folder where `storekeeper dev` runs —
/// the dev server's, from `.storekeeper/dev.env`, so a newcomer's `jobs stats` works without exporting anything.
func operatorDatabaseURL() throws -> DatabaseURL {
    if let text = ProcessInfo.processInfo.environment["DATABASE_URL"], !text.isEmpty { return try DatabaseURL(parsing: text) }
    if let text = DevEnvironment().settings()["DATABASE_URL"], !text.isEmpty { return try DatabaseURL(parsing: text) }
    throw CommandFailure(
        "DATABASE_URL is required (postgres://user:pass@host:port/db); in a `storekeeper dev` folder it is read from .storekeeper/dev.env")
}

/// "Now" for what the operator commands compute (an account's status, a grant's start and end): the real time, or —
/// on the dev database of `.storekeeper/dev.env`, read from there or exported from it — the dev server's clock, which
/// `simulate advance` may have moved, so `accounts show` and `grants add` answer as the API does.
func operatorNow() async -> Date {
    let environment = ProcessInfo.processInfo.environment["DATABASE_URL"] ?? ""
    let settings = DevEnvironment().settings()
    guard let url = settings["STOREKEEPER_URL"], let devDatabase = settings["DATABASE_URL"], environment.isEmpty || environment == devDatabase
    else { return Date() }
    if let now = try? await DevServer(settings: settings, url: url).now() { return now }
    // The dev server is not running: its clock is where the database keeps it (sql/0045).
    let offset = try? await withDatabase(label: "storekeeper.clock", timeout: .seconds(10)) { client, logger in
        try await DevClockOffset(client: client, logger: logger).stored()
    }
    return Date().addingTimeInterval(Double(offset ?? 0) / 1000)
}

/// Runs `body` with a client on the operator's database (``operatorDatabaseURL()``), bounded so an unreachable
/// database fails with one line (in 5 s) and a stuck one within `timeout`.
/// - Parameter timeout: the whole command's bound: a minute for what reads one account or a page; a command whose
///   work grows with the database (`replay --all`: at 100,000 subscribers several minutes) passes its own.
/// - Parameter connections: the pool's size: two, or more for a command that works on several at once.
func withDatabase<Result: Sendable>(
    label: String, timeout: Duration = .seconds(60), connections: Int = 2,
    _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> Result
) async throws -> Result {
    let url = try operatorDatabaseURL()
    let logger = commandLogger(label)
    return try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: connections), logger: logger) { client in
        try await ensureReachable(client, url: url, logger: logger)
        return try await withCommandTimeout(timeout) { try await body(client, logger) }
    }
}

/// Prints a value as pretty, key-sorted JSON with ISO 8601 dates.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    say(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// The tier catalogue of `STOREKEEPER_TIERS` (default `config/tiers.yml`) — in a `storekeeper dev` folder, the one the
/// dev server serves — or one line saying what is wrong. The management links name what the server's do: Play's
/// package (`STOREKEEPER_GOOGLE_PACKAGE_NAME`) and Stripe's billing portal (`STOREKEEPER_STRIPE_PORTAL_URL`).
func loadCatalogue() throws -> TierCatalogue {
    let dev = DevEnvironment().settings()
    var environment = catalogueEnvironment(dev: dev)
    if environment["STOREKEEPER_GOOGLE_PACKAGE_NAME", default: ""].isEmpty { environment["STOREKEEPER_GOOGLE_PACKAGE_NAME"] = dev[devPlayPackageKey] }
    switch TierCatalogue.load(environment: environment) {
    case .success(var catalogue):
        catalogue.googlePlayPackageName = environment["STOREKEEPER_GOOGLE_PACKAGE_NAME"].flatMap { $0.isEmpty ? nil : $0 }
        catalogue.stripePortalURL = environment["STOREKEEPER_STRIPE_PORTAL_URL"].flatMap { $0.isEmpty ? nil : $0 }
        return catalogue
    case .failure(let error): throw CommandFailure(error.problems.joined(separator: "; "))
    }
}

/// The environment the operator commands read the catalogue with: the dev folder's `STOREKEEPER_TIERS` when the
/// process has none.
func catalogueEnvironment(dev: [String: String] = DevEnvironment().settings()) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    if environment["STOREKEEPER_TIERS", default: ""].isEmpty { environment["STOREKEEPER_TIERS"] = dev["STOREKEEPER_TIERS"] }
    return environment
}

/// The catalogue file the operator commands read, as a full path: a report derived from it names it, so that one read
/// from the working directory's `config/tiers.yml` instead of the server's is told apart.
func catalogueFile() -> String {
    URL(fileURLWithPath: TierCatalogue.path(in: catalogueEnvironment())).standardizedFileURL.path
}

/// The fake Play's package in `.storekeeper/dev.env` (`dev --fake-play`), for the operator commands' links.
let devPlayPackageKey = "STOREKEEPER_DEV_GOOGLE_PACKAGE_NAME"
