import HTTPAPI
import Persistence

/// Ready when the database answers and every migration this binary knows is applied. Migrations it does not know are
/// the next release's, applied while this one still serves (they only expand the schema, docs/operations.md): this
/// process stays ready, so a rolling upgrade does not take every old process out of service at the migration.
struct PostgresReadiness: ReadinessChecking {
    let migrator: SchemaMigrator

    func unreadiness() async -> String? {
        do {
            let pending = try await migrator.pendingMigrations(newerAllowed: true)
            return pending.isEmpty ? nil : "migrations pending: \(pending.joined(separator: ", ")) (run storekeeper migrate)"
        } catch let error as PersistenceError {
            return error.message
        } catch {
            return "database unreachable"
        }
    }
}
