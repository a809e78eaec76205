import Foundation
import HTTPTypes
import Hummingbird

/// Adds `X-Content-Type-Options: nosniff` to every response, error answers included, and — on the authenticated
/// routes it is added to — `Cache-Control: no-store`, so no shared cache or browser history keeps an account's
/// status or an operator's page.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    /// `Cache-Control` for every answer, when set.
    var cacheControl: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            if let cause = (error as? APIError)?.cause {
                context.logger.log(level: cause.level, "\(cause.message)", metadata: ["error": "\(cause.detail)"])
            }
            response = try error.response(from: request, context: context)
        } catch is RequestBodyBudget.Exhausted {
            // The route groups' own copy of this middleware sits inside the budget's: answered here as the budget
            // answers it (503, closing), not as a failure (500, the rest of the body read outside the budget).
            response = try RequestBodyBudgetMiddleware<Context>.busy.response(from: request, context: context)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            response = try APIError(.internalServerError, code: .internalError, message: "the request failed; see the server log")
                .response(from: request, context: context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        if let cacheControl { response.headers[.cacheControl] = cacheControl }
        return response
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
