import Events
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// A service of the app receiving Storekeeper's webhooks the way `docs/events.md` tells one to: it checks the
/// Standard Webhooks signature, answers as `answer` says (a 2xx, or a failure), and remembers what it accepted.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        var id: String
        var type: String
        var account: String
        var sequence: Int
    }

    let secret = WebhookSignature.Secret.generate()
    private let accepted = Mutex<[Delivery]>([])
    private let requests = Mutex<[(headers: [String: String], body: Data)]>([])
    private let refused = Mutex(0)
    private let answer: @Sendable () -> HTTPResponse.Status

    init(answer: @escaping @Sendable () -> HTTPResponse.Status = { .noContent }) { self.answer = answer }

    var deliveries: [Delivery] { accepted.withLock { $0 } }
    /// Every request accepted, as received: its headers (lowercased names) and body, for a library to verify.
    var received: [(headers: [String: String], body: Data)] { requests.withLock { $0 } }
    var refusals: Int { refused.withLock { $0 } }

    /// What arrived, first copy of each `webhook-id` only, in arrival order.
    var firstCopies: [Delivery] {
        var seen: Set<String> = []
        return deliveries.filter { seen.insert($0.id).inserted }
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let body = Data(buffer: try await request.body.collect(upTo: 1 << 20))
            guard let id = request.headers[HTTPField.Name("webhook-id")!], let stamp = request.headers[HTTPField.Name("webhook-timestamp")!],
                let timestamp = Int64(stamp), let signature = request.headers[HTTPField.Name("webhook-signature")!],
                WebhookSignature(secrets: [self.secret]).verify(header: signature, id: id, timestamp: timestamp, body: body)
            else { return .unauthorized }
            let status = self.answer()
            guard (200..<300).contains(status.code) else {
                self.refused.withLock { $0 += 1 }
                return status
            }
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], object["id"] as? String == id,
                let type = object["type"] as? String, let sequence = object["sequence"] as? Int,
                let data = object["data"] as? [String: Any], let account = data["accountId"] as? String
            else { return .badRequest }
            self.accepted.withLock { $0.append(Delivery(id: id, type: type, account: account, sequence: sequence)) }
            let headers = Dictionary(request.headers.map { ($0.name.canonicalName, $0.value) }, uniquingKeysWith: { first, _ in first })
            self.requests.withLock { $0.append((headers, body)) }
            return status
        }
        return router
    }

    /// `STOREKEEPER_WEBHOOKS` for this receiver on `port`.
    func configuration(port: Int) -> String {
        "{endpoints: [{name: app, url: 'http://127.0.0.1:\(port)/hook', secrets: ['\(secret.encoded)']}]}"
    }
}
