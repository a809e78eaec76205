import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperRuntime

/// What `storekeeper simulate` sent last for each subscription (`.storekeeper/simulate/<originalTransactionId>.json`):
/// the product and the exact period, in milliseconds, as Apple keeps them — so the next notification continues the
/// same period and names the same transaction, as Apple's would.
struct SimulatedHistory {
    let directory: URL

    struct Current: Codable {
        var productId: String
        var periodStart: Int64
        var periodEnd: Int64
        /// When the last notification about the subscription was signed: the next one is signed later, as Apple's are.
        var signedDate: Int64?
        /// Whether the period in force is a free trial: what Apple signs about it later (cancel, expire, refund…) still
        /// carries the offer and a price of 0.
        var trial: Bool?

        var period: DateInterval {
            DateInterval(
                start: Date(timeIntervalSince1970: Double(periodStart) / 1000),
                end: Date(timeIntervalSince1970: Double(max(periodEnd, periodStart)) / 1000))
        }
    }

    func current(of subscription: String) -> Current? {
        guard let data = try? Data(contentsOf: file(subscription)) else { return nil }
        return try? JSONDecoder().decode(Current.self, from: data)
    }

    func record(_ current: Current, of subscription: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try JSONEncoder().encode(current).write(to: file(subscription), options: .atomic)
    }

    private func file(_ subscription: String) -> URL { directory.appendingPathComponent("\(subscription).json") }
}

/// A product as the server's catalogue (`GET /v1/tiers`) lists it.
struct ListedProduct {
    var type: String
    var price: Int64?
    var currency: String?
    /// The billing period of an auto-renewable product (`P1M`, `P1Y`…).
    var period: String?
}

/// The dev server `simulate` talks to: its clock (`/admin/dev/clock`, behind dev's key) and its base URL.
struct DevServer {
    let baseURL: String
    let apiKey: String?

    /// Refuses product ids the server's catalogue does not sell (`GET /v1/tiers`): Apple sends only its own products.
    /// Refuses a product the server's catalogue does not sell as one of `types` (`auto_renewable` for the
    /// subscription scenarios, `lifetime` or `non_renewing` for `buy`), naming those it does; returns each product's
    /// type, price and currency. A server whose catalogue cannot be read is not second-guessed.
    @discardableResult
    func checkProducts(_ ids: [String], types: Set<String> = ["auto_renewable"]) async throws -> [String: ListedProduct] {
        guard let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: baseURL + "/v1/tiers"), timeout: .seconds(10)),
            response.status == .ok, let body = try? await response.body.collect(upTo: 1 << 20),
            let catalogue = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        else { return [:] }
        let tiers = (catalogue["tiers"] as? [[String: Any]]) ?? []
        var products: [String: ListedProduct] = [:]
        for product in tiers.flatMap({ $0["products"] as? [[String: Any]] ?? [] }) {
            guard let id = product["id"] as? String else { continue }
            products[id] = ListedProduct(
                type: product["type"] as? String ?? "auto_renewable", price: (product["price"] as? NSNumber)?.int64Value,
                currency: product["currency"] as? String, period: product["period"] as? String)
        }
        let known = products.filter { types.contains($0.value.type) }.keys.sorted()
        for id in ids where !known.contains(id) {
            let kind = types == ["auto_renewable"] ? "subscription" : "lifetime or non-renewing"
            throw CommandFailure("\(id) is not a \(kind) product of this server's catalogue; those are: \(known.joined(separator: ", "))")
        }
        return products
    }

    /// The server's "now"; the real time for a server without a dev clock.
    func now() async throws -> Date {
        try await clock(method: .GET, body: nil) ?? Date()
    }

    /// Moves the server's clock on by `seconds`; refused for a server without a dev clock.
    func advance(by seconds: TimeInterval) async throws -> Date {
        guard let now = try await clock(method: .POST, body: #"{"advanceSeconds": \#(seconds)}"#) else {
            throw CommandFailure("\(baseURL) has no dev clock: only `storekeeper dev` can be moved in time")
        }
        return now
    }

    private func clock(method: HTTPMethod, body: String?) async throws -> Date? {
        guard apiKey != nil else { return nil }
        let (status, answer) = try await send(method, "/admin/dev/clock", body: body.map { Data($0.utf8) }, authorized: true)
        guard status == 200 else {
            guard status == 404 || status == 401 else {
                // The server's own word on what was asked (a move past ten years, say).
                let message = (try? JSONSerialization.jsonObject(with: answer) as? [String: Any])?["message"] as? String
                throw CommandFailure("the dev clock refused: \(message ?? "HTTP \(status)")")
            }
            return nil
        }
        struct Reading: Decodable { var nowMilliseconds: Int64 }
        let reading = try? JSONDecoder().decode(Reading.self, from: answer)
        return reading.map { Date(timeIntervalSince1970: Double($0.nowMilliseconds) / 1000) }
    }

    /// Sends a request to the server (a JSON `body`, with the API key when `authorized`) and returns its status and
    /// body; a server that cannot be reached is a one-line failure.
    func send(_ method: HTTPMethod, _ path: String, body: Data?, authorized: Bool = false) async throws -> (status: UInt, body: Data) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if authorized, let apiKey { request.headers.add(name: "Authorization", value: "Bearer \(apiKey)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            return (response.status.code, Data(buffer: try await response.body.collect(upTo: 1 << 20)))
        } catch {
            throw CommandFailure("cannot reach Storekeeper at \(baseURL): \(error)")
        }
    }
}
