import Foundation
import Logging
import PostgresNIO

extension DatabaseURL {
    /// Why a connection to the database fails, in one line (the server's own words, `password authentication failed
    /// for user "x"`, or the client's error code, `sslUnsupported`); `nil` when one opens. The pool retries a failed connection until its caller's
    /// deadline and then says only that the database did not answer, so a command that cannot reach it asks once more
    /// on a connection of its own for the reason an operator can act on.
    public func connectionFailure(logger: Logger) async -> String? {
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch tlsMode {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            return "TLS could not be set up: \(error)"
        }
        var configuration =
            socketDirectory.map {
                PostgresConnection.Configuration(
                    unixSocketPath: "\($0)/.s.PGSQL.\(port)", username: username, password: password, database: database)
            }
            ?? PostgresConnection.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(3)
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
            return nil
        } catch let error as PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return "\(underlying)" }
            return "\(error.code)"
        } catch {
            return "\(error)"
        }
    }
}
