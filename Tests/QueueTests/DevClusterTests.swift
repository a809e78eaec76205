import Foundation
import HostileInput
import Logging
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// `storekeeper dev`'s private PostgreSQL trusts every connection it takes, so it must take them only from its owner:
/// no TCP listener, a socket in a directory of mode 0700 — also after a start by hand, which reads only the cluster's
/// own configuration.
@Suite("The dev cluster is its owner's only")
struct DevClusterTests {
    @Test("no TCP listener, a private socket directory, no host line in pg_hba.conf; a second start reuses it")
    func privateCluster() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-cluster-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try PrivateCluster(directory: directory)
        let url = try cluster.start()
        defer { cluster.stop() }
        #expect(url.host.hasPrefix("/"), "the URL names the socket's directory, not a TCP host: \(url.host)")
        let attributes = try FileManager.default.attributesOfItem(atPath: url.host)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(FileManager.default.fileExists(atPath: "\(url.host)/.s.PGSQL.\(url.port)"))
        #expect(RawConnection(port: url.port, timeout: .seconds(1)) == nil, "something listens on 127.0.0.1:\(url.port)")
        let data = directory.appendingPathComponent("data")
        let access = try String(contentsOf: data.appendingPathComponent("pg_hba.conf"), encoding: .utf8)
        #expect(!access.split(separator: "\n").contains { $0.hasPrefix("host") }, "\(access)")
        let settings = try String(contentsOf: data.appendingPathComponent("storekeeper.conf"), encoding: .utf8)
        #expect(settings.contains("listen_addresses = ''") && settings.contains("unix_socket_directories = '\(url.host)'"))
        #expect(
            try String(contentsOf: data.appendingPathComponent("postgresql.conf"), encoding: .utf8).contains("include_if_exists = 'storekeeper.conf'")
        )
        #expect(cluster.isRunning)
        #expect(try PrivateCluster(directory: directory).start() == url, "a second start uses the running cluster")
    }

    @Test("a start with settings runs the server with them; a setting that could smuggle in another option, or is the cluster's own, is refused")
    func startedWithSettings() async throws {
        for good in ["shared_buffers=6GB", "log_min_duration_statement=-1", "auto_explain.log_min_duration=0", "log_destination=stderr,csvlog"] {
            #expect(throws: Never.self, "\(good)") { try PrivateCluster.checkSetting(good) }
        }
        for bad in [
            "shared_buffers", "=1", "work_mem=", "work_mem=1 -c fsync=off", "work_mem='1'", "a b=1", "work_mem=1\n", "wörk_mem=1", "work-mem=1",
            "port=5433", "Listen_Addresses=0.0.0.0", "unix_socket_permissions=0777", "hba_file=x",
        ] {
            #expect(throws: PrivateCluster.Failure.self, "\(bad)") { try PrivateCluster.checkSetting(bad) }
        }
        for (bad, says) in [
            ("timezone=Europe/Berlin", #"a value holds only letters, digits and . _ - , + (found "/")"#), ("work_mem=", #"has no value after "=""#),
            ("work mem=1", #"a name holds only letters, digits, _ and . (found " ")"#), ("hba_file=x", "sets hba_file itself"),
            ("work_mem=1\n-c", #""work_mem=1\n-c""#),
        ] {
            #expect(throws: PrivateCluster.Failure.self) { try PrivateCluster.checkSetting(bad) }
            do { try PrivateCluster.checkSetting(bad) } catch { #expect(error.description.contains(says), "\(error.description)") }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-cluster-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try PrivateCluster(directory: directory)
        // PostgreSQL itself would take this one (fsync=off is a setting): only the check stands in its way.
        #expect(throws: PrivateCluster.Failure.self) { try cluster.start(settings: ["work_mem=1MB -c fsync=off"]) }
        #expect(!FileManager.default.fileExists(atPath: directory.path), "a refused setting creates nothing")
        let url = try cluster.start(settings: ["work_mem=7MB", "wal_compression=lz4", "checkpoint_timeout=15min", "random_page_cost=1.1"])
        defer { cluster.stop() }
        let shown = try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) { client in
            var values: [String] = []
            for name in ["work_mem", "wal_compression", "checkpoint_timeout", "random_page_cost"] {
                for try await value in try await client.query("SELECT current_setting(\(name))").decode(String.self) { values.append(value) }
            }
            return values
        }
        #expect(shown == ["7MB", "lz4", "15min", "1.1"])
        #expect(throws: PrivateCluster.Failure.self, "the running server would keep its own") { try cluster.start(settings: ["work_mem=8MB"]) }
        #expect(try cluster.start() == url)
        let refused = directory.appendingPathComponent("refused")
        defer { try? FileManager.default.removeItem(at: refused) }
        do {
            _ = try PrivateCluster(directory: refused).start(settings: ["shared_bufers=6GB"])
            Issue.record("a setting PostgreSQL does not know started a server")
        } catch {
            #expect(error.description.contains("shared_bufers"), "the server's own words name the setting: \(error.description)")
        }
    }
}
