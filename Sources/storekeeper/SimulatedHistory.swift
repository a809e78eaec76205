import AppStoreModels
import Application
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperRuntime

/// What `storekeeper simulate` sent last for each subscription (`.storekeeper/simulate/<originalTransactionId>.json`):
/// the product and the exact period, in milliseconds, as Apple keeps them — so the next notification continues the
/// same period and names the same transaction, as Apple's would — and each one-time sale `buy` made
/// (`sale-<transactionId>.json`), for `refund-request`.
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
        /// What the last notification signed: the subscription as it stands, which a refund request repeats.
        var lastSigned: LastSigned?

        struct LastSigned: Codable {
            var status: Int32?
            var transaction: TransactionPayload
            var renewalInfo: RenewalInfoPayload?
        }

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

    /// A one-time sale `simulate buy` made (`sale-<transactionId>.json`), so `refund-request` signs the same
    /// transaction Apple would: its product, type, price and purchase date, and the account that bought it.
    struct Sale: Codable {
        var productId: String
        /// The catalogue's type: `lifetime`, `non_renewing` or `consumable`.
        var type: String
        var accountId: UUID
        var purchaseDate: Int64
        var price: Int64?
        var currency: String?
    }

    func sale(_ transactionId: String) -> Sale? {
        guard let data = try? Data(contentsOf: saleFile(transactionId)) else { return nil }
        return try? JSONDecoder().decode(Sale.self, from: data)
    }

    func record(_ sale: Sale, transactionId: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try JSONEncoder().encode(sale).write(to: saleFile(transactionId), options: .atomic)
    }

    private func saleFile(_ transactionId: String) -> URL { directory.appendingPathComponent("sale-\(transactionId).json") }
}

/// An App Store product as the server's catalogue (`GET /v1/tiers`) lists it.
struct ListedProduct {
    var type: String
    var price: Int64?
    var currency: String?
    /// The billing period of an auto-renewable product (`P1M`, `P1Y`…).
    var period: String?
    /// Its tier's level in the subscription group (1 is Apple's highest); nil for a pack.
    var level: Int?
}

/// The dev server `simulate` talks to: its clock (`/admin/dev/clock`, behind dev's key) and its base URL.
struct DevServer {
    let baseURL: String
    let apiKey: String?

    /// The dev server a `storekeeper dev` folder's settings (dev.env) name, or `url` when given.
    init(settings: [String: String], url: String? = nil) {
        self.init(baseURL: url ?? settings["STOREKEEPER_URL"] ?? "http://127.0.0.1:8080", apiKey: settings["STOREKEEPER_API_KEY"])
    }

    init(baseURL: String, apiKey: String?) {
        self.baseURL = baseURL
        self.apiKey = apiKey
    }

    /// Refuses a product the server's catalogue (`GET /v1/tiers`) does not sell on the App Store as one of `types`
    /// (`auto_renewable` for the subscription scenarios; `lifetime`, `non_renewing` or `consumable`, a credit pack, for
    /// `buy`), naming those it does: `simulate` sends Apple's notifications, and Apple sends only its own products.
    /// Returns each App Store product's type, price and currency (another store may use the same id for its own). A
    /// server whose catalogue cannot be read is an error: a product's type would be a guess (a pack would go out as a
    /// non-consumable).
    @discardableResult
    func checkProducts(_ ids: [String], types: Set<String> = ["auto_renewable"]) async throws -> [String: ListedProduct] {
        let (status, body) = try await send(.GET, "/v1/tiers", body: nil)
        guard status == 200, let catalogue = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            throw CommandFailure("\(baseURL)/v1/tiers answered HTTP \(status), not the catalogue: the products cannot be checked")
        }
        let tiers = (catalogue["tiers"] as? [[String: Any]]) ?? []
        var products: [String: ListedProduct] = [:]
        // Credit packs are listed apart from the tiers' products, with no type of their own.
        let packs = ((catalogue["topUps"] as? [[String: Any]]) ?? []).map { $0.merging(["type": "consumable"]) { kept, _ in kept } }
        let listed = tiers.flatMap { tier in (tier["products"] as? [[String: Any]] ?? []).map { ($0, tier["level"] as? Int) } }
        for (product, level) in listed + packs.map({ ($0, nil) }) {
            guard let id = product["id"] as? String, product["store"] as? String ?? "app_store" == "app_store" else { continue }
            products[id] = ListedProduct(
                type: product["type"] as? String ?? "auto_renewable", price: (product["price"] as? NSNumber)?.int64Value,
                currency: product["currency"] as? String, period: product["period"] as? String, level: level)
        }
        let known = products.filter { types.contains($0.value.type) }.keys.sorted()
        for id in ids where !known.contains(id) {
            let kind = types == ["auto_renewable"] ? "subscription" : "lifetime, non-renewing or credit pack"
            throw CommandFailure("\(id) is not an App Store \(kind) product of this server's catalogue; those are: \(known.joined(separator: ", "))")
        }
        return products
    }

    /// Says what became of the refund request `id` (the notification's UUID) of `account`, and the answer Storekeeper
    /// would send (`answerPreview`; in dev nothing is sent, as there is no Apple to send it to).
    func reportRefundRequest(_ id: UUID, account: UUID, about purchase: String) async throws {
        struct Listed: Decodable {
            struct Request: Decodable {
                var id: String
                var state: String
                var answerAt: String
                var answerPreview: RefundAnswerPreview?
            }
            var refundRequests: [Request]
        }
        let path = "/v1/accounts/\(account.uuidString.lowercased())/refund-requests"
        let (status, body) = try await send(.GET, path, body: nil, authorized: true)
        guard status == 200, let listed = try? JSONDecoder().decode(Listed.self, from: body),
            let request = listed.refundRequests.first(where: { UUID(uuidString: $0.id) == id })
        else {
            throw CommandFailure("refund request \(id.uuidString.lowercased()) is not listed at \(path) (HTTP \(status))")
        }
        say("refund request \(id.uuidString.lowercased()) about \(purchase): \(request.state), answer at \(request.answerAt)")
        if let preview = request.answerPreview { say("Storekeeper would answer \(preview.summary)") }
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

    /// Returns once the worker applied the notification the intake answered `intakeAnswer` to, so a `status` read next
    /// shows what it did; then says the account's status in one line.
    func reportApplied(intakeAnswer: Data, account: UUID?) async throws {
        struct Intake: Decodable { var notificationUUID: String? }
        guard let uuid = (try? JSONDecoder().decode(Intake.self, from: intakeAnswer))?.notificationUUID else { return }
        try await waitUntilApplied(uuid)
        if let account, let line = await statusLine(of: account) { say(line) }
    }

    /// A job as `GET /admin/jobs` lists it: what the waits below read.
    struct ListedJob: Decodable {
        struct Failure: Decodable { var error: String }
        var state: String
        var arguments: String
        var attempt: Int
        var runAt: Date?
        var errors: [Failure]
    }

    /// The dev server's jobs (`query` filters them); nil when the server does not list them (not a dev server).
    func jobs(_ query: String) async throws -> [ListedJob]? {
        struct List: Decodable { var jobs: [ListedJob] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let (status, body) = try await send(.GET, "/admin/jobs?limit=1000" + query, body: nil, authorized: true)
        guard status == 200 else { return nil }
        return try? decoder.decode(List.self, from: body).jobs
    }

    /// Waits until the worker has applied notification `uuid` (its apply job is neither waiting nor running), so what
    /// the next command reads is what it produced. A failed apply is the worker's error, said as one line.
    func waitUntilApplied(_ uuid: String, within seconds: TimeInterval = 30) async throws {
        func applying(_ query: String) async throws -> [ListedJob] {
            guard let listed = try await jobs("&kind=apply-notification" + query) else {
                throw CommandFailure("cannot read the dev server's jobs: is this a `storekeeper dev` server?")
            }
            return listed.filter { $0.arguments.lowercased().contains(uuid.lowercased()) }
        }
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let live = try await applying("")
            if let failed = live.first(where: { $0.state == "failed" }) {
                throw CommandFailure(
                    "the worker could not apply it (attempt \(failed.attempt)): \(failed.errors.last?.error ?? "no error recorded"); it retries")
            }
            if live.isEmpty {
                if let discarded = try await applying("&state=discarded").first {
                    throw CommandFailure("the worker gave up applying it: \(discarded.errors.last?.error ?? "no error recorded")")
                }
                return
            }
            guard Date() < deadline else {
                throw CommandFailure(
                    "accepted, but not applied within \(Int(seconds)) s: is the dev server's worker running? (storekeeper jobs list)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits (up to `seconds`) until no job due by now is waiting or running: after `advance`, what fell due in the
    /// time skipped (a hold's expiry, a credit reset) is done before the next command reads.
    func waitForDueJobs(within seconds: TimeInterval = 30) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard let listed = try await jobs("") else { return }
            let now = Date()
            // `runAt` is whole seconds: a job due within this second counts as due.
            if !listed.contains(where: { $0.state == "running" || ($0.state == "available" && ($0.runAt ?? .distantPast) <= now) }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        say("(jobs that fell due are still running: storekeeper jobs list)")
    }

    /// One line of what the account's status now says: its tier and state, and each meter's credits.
    func statusLine(of account: UUID) async -> String? {
        struct Status: Decodable {
            struct Meter: Decodable {
                var remaining: Int64?
                var held: Int64?
                var unlimited: Bool?
            }
            var state: String
            var tier: String?
            var credits: [String: Meter]?
        }
        guard let (status, body) = try? await send(.GET, "/v1/accounts/\(account.uuidString.lowercased())/status", body: nil, authorized: true),
            status == 200, let answer = try? JSONDecoder().decode(Status.self, from: body)
        else { return nil }
        let meters = (answer.credits ?? [:]).sorted { $0.key < $1.key }.map { meter, credits in
            if credits.unlimited == true { return "\(meter) unlimited" }
            let held = credits.held.map { $0 > 0 ? ", held \($0)" : "" } ?? ""
            return "\(meter) remaining \(credits.remaining.map(String.init) ?? "-")\(held)"
        }
        return "status: \(answer.tier ?? "no tier"), state \(answer.state)" + (meters.isEmpty ? "" : "; " + meters.joined(separator: "; "))
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
            return (response.status.code, Data(buffer: try await response.body.collect(upTo: 4 << 20)))
        } catch {
            // AsyncHTTPClient's own words for a refused connection are garbled ("connection reset (error set)…").
            let refused = "\(error)".contains("Connection refused")
            throw CommandFailure(
                "cannot reach Storekeeper at \(baseURL): "
                    + (refused ? "nothing listens there — is `storekeeper dev` running (or give --url)?" : "\(error)"))
        }
    }
}
