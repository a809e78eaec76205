import HTTPAPI
import Persistence

/// Ready when the database answers and every migration this binary knows is applied.
struct PostgresReadiness: ReadinessChecking {
    let migrator: SchemaMigrator

    func unreadiness() async -> String? {
        do {
            let pending = try await migrator.pendingMigrations()
            return pending.isEmpty ? nil : "migrations pending: \(pending.joined(separator: ", ")) (run storekeeper migrate)"
        } catch let error as PersistenceError {
            return error.message
        } catch {
            return "database unreachable"
        }
    }
}
