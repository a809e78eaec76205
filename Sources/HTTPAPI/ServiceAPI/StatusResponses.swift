import Application
import Hummingbird

// The status documents are the use cases' (events embed them); the HTTP layer only sends them.
extension SubscriptionDetailResponse: ResponseEncodable {}

/// The status answer is on every request of the app's backend: it is sent as written by hand rather than through
/// the context's `JSONEncoder`, with the same bytes.
extension AccountStatusResponse: ResponseGenerator {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let json = self.json
        return Response(
            status: .ok,
            headers: [.contentType: APIError.jsonContentType, .contentLength: String(json.count)],
            body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }
}
