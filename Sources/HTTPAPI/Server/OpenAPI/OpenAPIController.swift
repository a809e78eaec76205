import Foundation
import Hummingbird
import NIOCore

/// `GET /openapi.json` (no authentication): the OpenAPI 3.1 description of the routes this server serves as
/// configured — the Apple, Stripe and Play intakes, the service API, the admin API and dashboard, health and metrics.
/// It is `docs/openapi.json` (which describes every route), the package's resource (``OpenAPIDocument``), less the
/// operations of features this configuration leaves off (offers without the In-App Purchase key, Stripe, Play,
/// Retention Messaging, the dev clock) and the links to them: a client that trusts it never meets an undocumented 404.
/// `OpenAPITests` keeps the file true to the router and, through the `jsonschema` library, to real answers.
public struct OpenAPIController: Sendable {
    let document: String

    /// - Parameter routes: the routes the server serves; `/openapi.json` itself is added to them.
    public init(serving routes: [Router<StorekeeperRequestContext>.RouteDescription]) {
        document = Self.document(serving: Set(routes.map { Self.operation($0.method.rawValue, $0.path.description) }))
    }

    public func addRoutes(to router: Router<StorekeeperRequestContext>) {
        let body = ByteBuffer(string: document)
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: APIError.jsonContentType, .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: body))
        }
    }

    static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// A route or an operation as `METHOD /path/{}/…`: the parameter names apart.
    static func operation(_ method: String, _ path: String) -> String {
        let segments = path.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") ? "{}" : String($0) }
        return "\(method.uppercased()) /" + segments.joined(separator: "/")
    }

    /// ``OpenAPIDocument/text`` without the operations `served` lacks, nor the links to them; the text itself when it
    /// lacks none.
    static func document(serving served: Set<String>) -> String {
        // `serve` does not start without the document (``OpenAPIDocument/text``); a test's router may.
        guard let text = OpenAPIDocument.text else { return "{}" }
        let served = served.union([operation("GET", "/openapi.json")])
        guard var document = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            var paths = document["paths"] as? [String: Any]
        else { return text }
        var removed = false
        for (path, value) in paths {
            guard var item = value as? [String: Any] else { continue }
            for method in methods where item[method] != nil && !served.contains(operation(method, path)) {
                item.removeValue(forKey: method)
                removed = true
            }
            paths[path] = item.keys.contains(where: methods.contains) ? item : nil
        }
        guard removed else { return text }
        // Links name operations by id: those to a removed operation go with it.
        let kept = Set(
            paths.values.flatMap { item in
                methods.compactMap { ((item as? [String: Any])?[$0] as? [String: Any])?["operationId"] as? String }
            })
        for (path, value) in paths {
            guard var item = value as? [String: Any] else { continue }
            for method in methods {
                guard var operation = item[method] as? [String: Any], var responses = operation["responses"] as? [String: Any] else { continue }
                for (status, response) in responses {
                    guard var response = response as? [String: Any], let links = response["links"] as? [String: Any] else { continue }
                    let live = links.filter { (($0.value as? [String: Any])?["operationId"] as? String).map(kept.contains) ?? true }
                    response["links"] = live.isEmpty ? nil : live
                    responses[status] = response
                }
                operation["responses"] = responses
                item[method] = operation
            }
            paths[path] = item
        }
        document["paths"] = paths
        guard let data = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return text
        }
        return String(decoding: data, as: UTF8.self)
    }
}
