import Foundation
import HostileInput
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
}
