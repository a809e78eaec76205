import Foundation
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("DATABASE_URL")
struct DatabaseURLTests {
    @Test("a host that starts with / is a Unix socket directory, written as libpq writes it; the text form reads back the same")
    func socketForms() throws {
        for text in [
            "postgres://app@:6432/shop?host=/var/run/postgresql", "postgresql://app@/shop?host=/var/run/postgresql&port=6432",
            "postgres://app@%2Fvar%2Frun%2Fpostgresql:6432/shop", "postgres://app@localhost:1/shop?host=/var/run/postgresql&port=6432",
        ] {
            let url = try DatabaseURL(parsing: text)
            #expect(url.socketDirectory == "/var/run/postgresql" && url.port == 6432 && url.username == "app" && url.database == "shop", "\(text)")
            #expect(try DatabaseURL(parsing: url.urlString) == url, "\(url.urlString)")
            #expect(url.description == "postgres://app@:6432/shop?host=/var/run/postgresql")
        }
        let tcp = try DatabaseURL(parsing: "postgres://app:secret@db.internal:5433/shop?sslmode=require")
        #expect(tcp.socketDirectory == nil && tcp.host == "db.internal" && tcp.port == 5433 && tcp.tlsMode == .require)
        #expect(try DatabaseURL(parsing: tcp.urlString) == tcp)
        let odd = DatabaseURL(host: "/tmp/a b&c", port: 5432, username: "app", password: "p&q", database: "shop")
        #expect(try DatabaseURL(parsing: odd.urlString).socketDirectory == "/tmp/a b&c")
    }

    @Test("a port that is not 1–65535, or no host at all, is a clear configuration error")
    func badForms() {
        for text in [
            "postgres://app@:0/shop?host=/tmp", "postgres://app@/shop?host=/tmp&port=http", "postgres://app@/shop",
            "postgres://app@:99999/shop?host=/tmp",
        ] {
            #expect(throws: ConfigurationError.self, "\(text)") { try DatabaseURL(parsing: text) }
        }
    }

    @Test("connections through the socket reach the server (no client address) and say which process they belong to")
    func connectsThroughTheSocket() async throws {
        let admin = try TestDatabase.adminURL()
        let directory = try #require(ProcessInfo.processInfo.environment["STOREKEEPER_TEST_SOCKET_DIRECTORY"])
        let url = try DatabaseURL(parsing: "postgres://\(admin.username)@:\(admin.port)/\(admin.database)?host=\(directory)")
        let configuration = url.clientConfiguration(maximumConnections: 1, applicationName: "storekeeper-test")
        let (local, name) = try await PostgresClient.withRunning(configuration, logger: TestDatabase.logger) { client in
            let rows = try await client.query("SELECT inet_client_addr() IS NULL, current_setting('application_name')", logger: TestDatabase.logger)
            for try await row in rows.decode((Bool, String).self) { return row }
            return (false, "")
        }
        #expect(local && name == "storekeeper-test")
    }
}
