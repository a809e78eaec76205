import Foundation
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Testing

@Suite("Migrations")
struct MigrationTests {
    @Test("applied once each, safe when several processes migrate at once, idempotent afterwards")
    func concurrentAndIdempotent() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let results = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) {
                            client in
                            try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                                .migrate()
                        }
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(results.filter { !$0.isEmpty }.count == 1)
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                #expect(try await migrator.migrate().isEmpty)
                #expect(try await migrator.pendingMigrations().isEmpty)
            }
        }
    }

    @Test("refuses a database migrated by a newer version")
    func newerDatabase() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                try await migrator.migrate()
                try await client.query(
                    "INSERT INTO storekeeper_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')",
                    logger: TestDatabase.logger)
                let error = await #expect(throws: PersistenceError.self) { try await migrator.migrate() }
                #expect(error?.code == .databaseNewerThanCode)
            }
        }
    }
}
