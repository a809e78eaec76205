import Hummingbird
import HummingbirdCore
import Logging

extension HTTPServerLimits {
    /// HTTP/1.1 with these limits' per-connection deadlines and head size.
    public func server(logger: Logger) -> HTTPServerBuilder {
        .http1(
            configuration: .init(
                additionalChannelHandlers: [ConnectionDeadlineHandler(limits: self, logger: logger)],
                httpDecoderConfiguration: .init(maxHeaderFieldSize: headBytes, maxHeaderListSize: headBytes, maxHeaderFieldCount: 100)))
    }

    /// The application configuration for `address`, accepting at most ``maximumConnections`` at once.
    public func configuration(address: BindAddress, serverName: String, logger: Logger) -> ApplicationConfiguration {
        .init(
            address: address, serverName: serverName, backlog: 1_024,
            availableConnectionsDelegate: .maximum(maximumConnections, logger: logger))
    }
}
