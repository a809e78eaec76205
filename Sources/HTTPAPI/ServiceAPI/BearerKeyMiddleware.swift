import Hummingbird

/// Admits requests whose `Authorization: Bearer <key>` is one of the configured keys (``KeyRing``); everything else
/// gets 401. The service API and `/metrics` use it; the admin routes use ``OperatorMiddleware``, which also knows who
/// each key is.
public struct BearerKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    private let keys: KeyRing

    public init(keys: [String]) { self.keys = KeyRing(keys: keys) }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let key = KeyRing.presentedKey(request, basic: false), keys.position(of: key) != nil else {
            return try KeyRing.refusal(basicRealm: nil, request: request, context: context)
        }
        return try await next(request, context)
    }
}
