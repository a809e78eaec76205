import Foundation
import Hummingbird

/// The request context of every Storekeeper route: a 512 KiB body limit and RFC 3339 dates in JSON.
public struct StorekeeperRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Who sent an admin request (``OperatorMiddleware`` sets it); `nil` on every other route.
    public var operatorIdentity: OperatorIdentity?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    /// Apple's notifications are a few KiB; anything above 512 KiB is refused with 413.
    public static let maximumBody = 512 * 1024

    public var maxUploadSize: Int { Self.maximumBody }

    public var responseEncoder: JSONEncoder { Self.jsonEncoder }

    /// How every JSON answer is written: ISO 8601 dates, sorted keys. One encoder for all (it keeps no state between
    /// calls), not one per response.
    static let jsonEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}
