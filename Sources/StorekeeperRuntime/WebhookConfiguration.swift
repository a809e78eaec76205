import Credits
import Events
import Foundation

/// `STOREKEEPER_WEBHOOKS`: the path of a YAML file, or the YAML (or JSON) itself, listing the endpoints:
///
/// ```yaml
/// endpoints:
///   - name: billing                     # letters, digits, - and _
///     url: https://billing.internal/hooks/storekeeper
///     secrets: [whsec_…, whsec_…]       # the first signs; all sign while one is rotated out
///     types: [subscription.*, credits.depleted]   # optional: every type by default
/// ```
public enum WebhookConfiguration {
    struct File: Decodable {
        var endpoints: [Endpoint]
    }

    struct Endpoint: Decodable {
        var name: String
        var url: String
        var secrets: [String]
        var types: [String]?
    }

    /// The endpoints `value` describes, or every problem found.
    public static func endpoints(from value: String) throws(ConfigurationError) -> [WebhookEndpoint] {
        let place = "STOREKEEPER_WEBHOOKS"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: .webhooks)
        var problems: [String] = []
        var endpoints: [WebhookEndpoint] = []
        for (index, endpoint) in file.endpoints.enumerated() {
            let at = "\(place): endpoints.\(index)"
            let nameCharacters = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_"))
            if endpoint.name.isEmpty || endpoint.name.count > 64 || endpoint.name.unicodeScalars.contains(where: { !nameCharacters.contains($0) }) {
                problems.append("\(at).name must be 1–64 letters, digits, - or _, got \"\(endpoint.name)\"")
            }
            if endpoints.contains(where: { $0.name == endpoint.name }) { problems.append("\(at).name \"\(endpoint.name)\" is used twice") }
            guard let url = URL(string: endpoint.url), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                problems.append("\(at).url must be an http(s) URL, got \"\(endpoint.url)\"")
                continue
            }
            var secrets: [WebhookSignature.Secret] = []
            for secret in endpoint.secrets {
                do { secrets.append(try WebhookSignature.Secret(secret)) } catch {
                    problems.append("\(at).secrets: a secret must be whsec_ followed by base64 of 24–64 bytes")
                }
            }
            if endpoint.secrets.isEmpty { problems.append("\(at).secrets: at least one secret is required") }
            do {
                endpoints.append(WebhookEndpoint(name: endpoint.name, url: url, secrets: secrets, types: try EventTypeFilter(endpoint.types ?? [])))
            } catch {
                problems.append("\(at).types: \(error.description)")
            }
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return endpoints
    }
}
