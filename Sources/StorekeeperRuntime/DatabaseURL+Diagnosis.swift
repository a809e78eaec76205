import Foundation
import Logging
import PostgresNIO

extension DatabaseURL {
    /// Why a connection to the database fails, in one line (the server's own words, `password authentication failed
    /// for user "x"`, or the client's error code, `sslUnsupported`); `nil` when one opens. The pool retries a failed connection until its caller's
    /// deadline and then says only that the database did not answer, so a command that cannot reach it asks once more
    /// on a connection of its own for the reason an operator can act on.
    public func connectionFailure(logger: Logger) async -> String? {
        switch await login(logger: logger) {
        case .accepted: nil
        case .refused(let reason), .unreached(let reason): reason
        }
    }

    /// What a login with this URL's settings met: accepted; refused for a reason no retry changes (a password or role
    /// the server refuses, a database that does not exist, TLS it cannot give); or a server not reached (down, starting
    /// up, a network away), which may answer later.
    public enum LoginOutcome: Sendable, Equatable {
        case accepted
        case refused(String)
        case unreached(String)
    }

    /// Opens one connection of its own (not the pool's, which retries for good and says only that nothing answered in
    /// time) and says how the server met it.
    public func login(logger: Logger) async -> LoginOutcome {
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch tlsMode {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            return .refused("TLS could not be set up: \(error)")
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
            return .accepted
        } catch let error as PSQLError {
            switch error.code {
            case .sslUnsupported: return .refused("the server does not offer TLS, which sslmode=require asks for")
            case .authMechanismRequiresPassword: return .refused("the server asks for a password, and the URL has none")
            case .unsupportedAuthMechanism: return .refused("the server asks for an authentication method this client does not support")
            case .saslError: return .refused("the password exchange (SCRAM) failed: \(error.underlying.map { "\($0)" } ?? "no detail")")
            default: break
            }
            if let tls = error.underlying as? NIOSSLError { return .refused("TLS failed: \(tls)") }
            guard let message = error.serverInfo?[.message] else { return .unreached(error.underlying.map { "\($0)" } ?? "\(error.code)") }
            return Self.refusesForGood(sqlState: error.serverInfo?[.sqlState]) ? .refused(message) : .unreached(message)
        } catch {
            return .unreached("\(error)")
        }
    }

    /// Class 28 (invalid authorization: a password refused, a role that does not exist, no pg_hba.conf entry) and
    /// 3D000 (the database does not exist) stay so until someone changes a setting. Others — 57P03 "the database
    /// system is starting up", 53300 too many connections — pass.
    static func refusesForGood(sqlState: String?) -> Bool {
        guard let sqlState else { return false }
        return sqlState.hasPrefix("28") || sqlState == "3D000"
    }
}
