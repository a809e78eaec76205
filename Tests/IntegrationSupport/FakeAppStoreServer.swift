import AppStoreModels
import Crypto
import Foundation
import Hummingbird
import LocalSigning
import NIOCore
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A local App Store Server API for tests: checks every request's ES256 bearer token (header, claims, signature
/// against the configured key), serves subscription statuses, notification history (paged), transaction info and test
/// notifications signed by an in-process Apple-shaped chain, and can be told to fail the next requests (429, Apple
/// error codes).
final class FakeAppStoreServer: Sendable {
    struct Failure: Error, Sendable {
        var httpStatus: Int
        var errorCode: Int64?
    }

    struct Subscription: Sendable {
        var status: Int32
        var transaction: TransactionPayload
        var renewalInfo: RenewalInfoPayload?
    }

    struct State {
        var subscriptions: [String: Subscription] = [:]
        var history: [String] = []
        var failures: [Failure] = []
        var requests: [String] = []
        var unauthorized = 0
        var testAttempts: [String] = []
        var extraTransactions: [TransactionPayload] = []
        /// Send Consumption Information bodies Apple accepted, by transaction id.
        var consumptionAnswers: [(transactionId: String, body: Data)] = []
        /// Look Up Order ID: each order id's transaction ids.
        var orders: [String: [String]] = [:]
        /// Renewal extensions Apple made, by request identifier: the subscription, when, and the answer sent.
        var extensions: [String: (subscription: String, at: Date, answer: [String: Any])] = [:]
        /// Mass extensions asked for, by request identifier.
        var massExtensions: [String: MassExtension] = [:]
        /// The Get Retention Message endpoint configured (Retention Messaging API), and each performance test's result.
        var retentionURL: String?
        /// Each performance test's result document (JSON).
        var performanceTests: [String: Data] = [:]
    }

    struct MassExtension {
        var productId: String
        var days: Int
        var storefronts: [String]?
        var succeeded: Int64 = 0
        var failed: Int64 = 0
        /// Status requests answered: Apple reports it complete from the second on (it takes hours in truth).
        var polls = 0
    }

    let signer: JWSSigner
    let keyId: String
    let issuerId: String
    let bundleId: String
    let publicKey: P256.Signing.PublicKey
    let state = Mutex(State())
    let pageSize = 2

    init(signer: JWSSigner, keyId: String, issuerId: String, bundleId: String, publicKey: P256.Signing.PublicKey) {
        self.signer = signer
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.publicKey = publicKey
    }

    var requests: [String] { state.withLock { $0.requests } }
    var unauthorized: Int { state.withLock { $0.unauthorized } }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/inApps/v1/subscriptions/{id}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let id = try context.parameters.require("id")
                guard let subscription = self.state.withLock({ $0.subscriptions[id] }) else {
                    return Self.error(404, 4_040_005, "Original transaction id not found.")
                }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                var transaction = subscription.transaction
                transaction.signedDate = now
                var renewal = subscription.renewalInfo
                renewal?.signedDate = now
                let last: [String: Any?] = [
                    "status": subscription.status, "originalTransactionId": id,
                    "signedTransactionInfo": try self.signer.sign(transaction),
                    "signedRenewalInfo": try renewal.map { try self.signer.sign($0) },
                ]
                return try Self.json([
                    "environment": "Sandbox", "bundleId": self.bundleId,
                    "data": [["subscriptionGroupIdentifier": "group", "lastTransactions": [last.compactMapValues { $0 }]]],
                ])
            }
        }
        router.post("/inApps/v1/notifications/history") { request, context in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                guard let query = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
                    let start = query["startDate"] as? Int64, let end = query["endDate"] as? Int64
                else { return Self.error(400, 4_000_000, "startDate and endDate are required") }
                guard start < end else { return Self.error(400, 4_000_013, "startDate after endDate") }
                let offset = request.uri.queryParameters.get("paginationToken").flatMap { Int($0) } ?? 0
                let history = self.state.withLock { $0.history }
                let page = Array(history.dropFirst(offset).prefix(self.pageSize))
                let more = offset + page.count < history.count
                var answer: [String: Any] = ["notificationHistory": page.map { ["signedPayload": $0] }, "hasMore": more]
                if more { answer["paginationToken"] = String(offset + page.count) }
                return try Self.json(answer)
            }
        }
        router.get("/inApps/v1/transactions/{id}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let id = try context.parameters.require("id")
                guard let transaction = self.transactions().first(where: { $0.transactionId == id }) else {
                    return Self.error(404, 4_040_010, "Transaction id not found.")
                }
                return try Self.json(["signedTransactionInfo": try self.signer.sign(transaction)])
            }
        }
        router.get("/inApps/v2/history/{id}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let id = try context.parameters.require("id")
                let all = self.transactions().filter { $0.originalTransactionId == id || $0.transactionId == id }
                let offset = request.uri.queryParameters.get("revision").flatMap { Int($0) } ?? 0
                let page = Array(all.dropFirst(offset).prefix(self.pageSize))
                let more = offset + page.count < all.count
                return try Self.json([
                    "signedTransactions": try page.map { try self.signer.sign($0) }, "revision": String(offset + page.count),
                    "hasMore": more, "bundleId": self.bundleId, "environment": "Sandbox",
                ])
            }
        }
        router.put("/inApps/v1/transactions/{id}/appAccountToken") { request, context in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                let id = try context.parameters.require("id")
                guard let token = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["appAccountToken"] as? String,
                    UUID(uuidString: token) != nil
                else { return Self.error(400, 4_000_183, "Invalid appAccountToken.") }
                let known = self.state.withLock { state -> Bool in
                    guard state.subscriptions[id] != nil else { return false }
                    state.subscriptions[id]?.transaction.appAccountToken = token
                    return true
                }
                return known ? Response(status: .ok) : Self.error(404, 4_040_005, "Original transaction id not found.")
            }
        }
        router.put("/inApps/v2/transactions/consumption/{id}") { request, context in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                try self.consumption(try context.parameters.require("id"), body: Data(buffer: body))
            }
        }
        router.get("/inApps/v1/lookup/{orderId}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let ids = self.state.withLock { $0.orders[(try? context.parameters.require("orderId")) ?? ""] }
                guard let ids else { return try Self.json(["status": 1]) }
                let found = self.transactions().filter { ids.contains($0.transactionId) }
                return try Self.json(["status": 0, "signedTransactions": try found.map { try self.signer.sign($0) }])
            }
        }
        router.get("/inApps/v2/refund/lookup/{id}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let id = try context.parameters.require("id")
                guard self.transactions().contains(where: { $0.transactionId == id || $0.originalTransactionId == id }) else {
                    return Self.error(404, 4_040_010, "Transaction id not found.")
                }
                let refunded = self.transactions().filter { $0.revocationDate != nil }.sorted { $0.transactionId < $1.transactionId }
                let offset = request.uri.queryParameters.get("revision").flatMap { Int($0) } ?? 0
                let page = Array(refunded.dropFirst(offset).prefix(self.pageSize))
                return try Self.json([
                    "signedTransactions": try page.map { try self.signer.sign($0) }, "revision": String(offset + page.count),
                    "hasMore": offset + page.count < refunded.count,
                ])
            }
        }
        router.put("/inApps/v1/subscriptions/extend/{id}") { request, context in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                try self.extend(try context.parameters.require("id"), body: Data(buffer: body))
            }
        }
        router.post("/inApps/v1/subscriptions/extend/mass") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in try self.extendAll(body: Data(buffer: body)) }
        }
        router.get("/inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}") { request, context in
            try self.guarded(request) { () throws -> Response in
                let (product, identifier) = (try context.parameters.require("productId"), try context.parameters.require("requestIdentifier"))
                let mass = self.state.withLock { state -> MassExtension? in
                    guard state.massExtensions[identifier]?.productId == product else { return nil }
                    state.massExtensions[identifier]?.polls += 1
                    return state.massExtensions[identifier]
                }
                guard let mass else { return Self.error(404, 4_040_009, "Renewal extension request not found.") }
                var answer: [String: Any] = ["requestIdentifier": identifier, "complete": mass.polls >= 2]
                if mass.polls >= 2 {
                    answer["completeDate"] = Int64(Date().timeIntervalSince1970 * 1000)
                    answer["succeededCount"] = mass.succeeded
                    answer["failedCount"] = mass.failed
                }
                return try Self.json(answer)
            }
        }
        router.get("/inApps/v1/messaging/realtime/url") { request, _ in
            try self.guarded(request) { () throws -> Response in
                guard let url = self.state.withLock({ $0.retentionURL }) else { return Self.error(404, 4_040_016, "Realtime URL not found.") }
                return try Self.json(["realtimeURL": url])
            }
        }
        router.put("/inApps/v1/messaging/realtime/url") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                guard let url = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["realtimeURL"] as? String,
                    url.utf8.count <= 256, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? "")
                else { return Self.error(400, 4_000_157, "Invalid realtime URL.") }
                self.state.withLock { $0.retentionURL = url }
                return Response(status: .ok)
            }
        }
        router.delete("/inApps/v1/messaging/realtime/url") { request, _ in
            try self.guarded(request) { () throws -> Response in
                self.state.withLock { $0.retentionURL = nil }
                return Response(status: .ok)
            }
        }
        router.post("/inApps/v1/messaging/performanceTest") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 16)
            return try self.guarded(request) { () throws -> Response in
                guard let url = self.state.withLock({ $0.retentionURL }) else { return Self.error(404, 4_040_016, "Realtime URL not found.") }
                guard
                    let transaction = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["originalTransactionId"]
                        as? String
                else { return Self.error(400, 4_000_000, "Invalid request.") }
                let id = UUID().uuidString.lowercased()
                let pending = try JSONSerialization.data(withJSONObject: ["result": "PENDING", "target": url])
                self.state.withLock { $0.performanceTests[id] = pending }
                Task { await self.runPerformanceTest(id, url: url, originalTransactionId: transaction) }
                return try Self.json(["requestId": id, "config": Self.performanceConfig])
            }
        }
        router.get("/inApps/v1/messaging/performanceTest/result/{id}") { request, context in
            try self.guarded(request) { () throws -> Response in
                guard let result = self.state.withLock({ $0.performanceTests[(try? context.parameters.require("id")) ?? ""] }) else {
                    return Self.error(404, 4_040_017, "Performance test not found.")
                }
                return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: result)))
            }
        }
        router.post("/inApps/v1/notifications/test") { request, _ in
            try self.guarded(request) { () throws -> Response in try Self.json(["testNotificationToken": "test-token-1"]) }
        }
        router.get("/inApps/v1/notifications/test/{token}") { request, _ in
            try self.guarded(request) { () throws -> Response in
                let attempts = self.state.withLock { state -> [String] in
                    state.testAttempts.append("SUCCESS")
                    return Array(state.testAttempts.prefix(1))
                }
                return try Self.json([
                    "sendAttempts": attempts.map { ["attemptDate": Int64(Date().timeIntervalSince1970 * 1000), "sendAttemptResult": $0] }
                ])
            }
        }
        return router
    }

    /// The parameters of the fake's performance test (Apple's are larger; the rules the same).
    static var performanceConfig: [String: Any] {
        [
            "maxConcurrentRequests": 4, "totalRequests": 12, "totalDuration": 10_000, "responseTimeThreshold": 700, "successRateThreshold": 100,
        ]
    }

    /// Apple's performance test as it documents it: requests about `originalTransactionId`, each signed as a real one,
    /// sent to the configured URL; PASS when every answer is a 200 within the response-time threshold.
    func runPerformanceTest(_ id: String, url: String, originalTransactionId: String) async {
        var times: [Int] = []
        var failures: [String: Int] = [:]
        for _ in 0..<12 {
            let payload = RetentionRequestPayload(
                originalTransactionId: originalTransactionId, appAppleId: nil, productId: "pro.monthly", userLocale: "en-US",
                requestIdentifier: UUID().uuidString, signedDate: Int64(Date().timeIntervalSince1970 * 1000), environment: .sandbox)
            guard let target = URL(string: url), let jws = try? signer.sign(payload) else {
                failures["OTHER", default: 0] += 1
                continue
            }
            var request = URLRequest(url: target)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(#"{"signedPayload": "\#(jws)"}"#.utf8)
            let started = ContinuousClock.now
            do {
                let (_, response) = try await URLSession.shared.data(for: request)
                let milliseconds = Int((ContinuousClock.now - started) / .milliseconds(1))
                if (response as? HTTPURLResponse)?.statusCode == 200, milliseconds <= 700 {
                    times.append(milliseconds)
                } else {
                    failures[milliseconds > 700 ? "TIMED_OUT" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE", default: 0] += 1
                }
            } catch {
                failures["NO_RESPONSE", default: 0] += 1
            }
        }
        let sorted = times.sorted()
        func percentile(_ p: Double) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        let result: [String: Any] = [
            "config": Self.performanceConfig, "target": url, "result": failures.isEmpty ? "PASS" : "FAIL",
            "successRate": times.count * 100 / 12, "numPending": 0,
            "responseTimes": [
                "average": sorted.isEmpty ? 0 : sorted.reduce(0, +) / sorted.count, "p50": percentile(0.5), "p90": percentile(0.9),
                "p95": percentile(0.95), "p99": percentile(0.99),
            ],
            "failures": failures,
        ]
        let document = (try? JSONSerialization.data(withJSONObject: result)) ?? Data()
        state.withLock { $0.performanceTests[id] = document }
    }

    /// Send Consumption Information as Apple documents it: the transaction must exist; `customerConsented` must be
    /// true; `deliveryStatus` and `sampleContentProvided` are required; `consumptionPercentage` is 0–100000 and
    /// refused for auto-renewable subscriptions; a consumable's `GRANT_PRORATED` needs a percentage above 0. 202 with
    /// no body when accepted.
    func consumption(_ transactionId: String, body: Data) throws -> Response {
        guard let transaction = transactions().first(where: { $0.transactionId == transactionId }) else {
            return Self.error(404, 4_040_010, "Transaction id not found.")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            return Self.error(400, 4_000_000, "Invalid request.")
        }
        guard object["customerConsented"] as? Bool == true else { return Self.error(400, 4_000_035, "Invalid customer consented.") }
        let deliveryStatuses = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard let delivery = object["deliveryStatus"] as? String, deliveryStatuses.contains(delivery) else {
            return Self.error(400, 4_000_036, "Invalid delivery status.")
        }
        guard object["sampleContentProvided"] is Bool else { return Self.error(400, 4_000_041, "Invalid sample content provided.") }
        let preference = object["refundPreference"] as? String
        if let preference, !["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(preference) {
            return Self.error(400, 4_000_044, "Invalid refund preference.")
        }
        let percentage = object["consumptionPercentage"] as? Int
        if object["consumptionPercentage"] != nil {
            guard let percentage, (0...100_000).contains(percentage) else { return Self.error(400, 4_000_045, "Invalid consumption percentage.") }
            if transaction.type == "Auto-Renewable Subscription" {
                return Self.error(400, 4_000_046, "Consumption percentage is not supported for auto-renewable subscriptions.")
            }
        } else if preference == "GRANT_PRORATED", transaction.type != "Auto-Renewable Subscription" {
            return Self.error(400, 4_000_047, "GRANT_PRORATED needs a consumption percentage.")
        }
        state.withLock { $0.consumptionAnswers.append((transactionId, body)) }
        return Response(status: .accepted)
    }

    /// The body both extend endpoints share, checked as Apple documents it: `extendByDays` 1–90 (4000009),
    /// `extendReasonCode` 0–3 (4000010), `requestIdentifier` 1–128 characters (4000011).
    func extensionBody(_ body: Data) -> (days: Int, identifier: String, object: [String: Any])? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any], let days = object["extendByDays"] as? Int,
            (1...90).contains(days), let reason = object["extendReasonCode"] as? Int, (0...3).contains(reason),
            let identifier = object["requestIdentifier"] as? String, (1...128).contains(identifier.count)
        else { return nil }
        return (days, identifier, object)
    }

    /// Extend a Subscription Renewal Date as Apple documents it: an unknown subscription is 4040005; one in a free
    /// offer period, not active, or extended twice in the past 365 days is refused (4030004, 4030005); a request
    /// identifier used before answers as it did. The subscription's expiry moves by the days.
    func extend(_ id: String, body: Data) throws -> Response {
        guard let (days, identifier, _) = extensionBody(body) else { return Self.error(400, 4_000_009, "Invalid extend request.") }
        if let done = state.withLock({ $0.extensions[identifier] }) { return try Self.json(done.answer) }
        let now = Date()
        let outcome = state.withLock { state -> Result<[String: Any], Failure> in
            guard var subscription = state.subscriptions[id] else { return .failure(Failure(httpStatus: 404, errorCode: 4_040_005)) }
            let expires = subscription.transaction.expiresDate ?? 0
            guard subscription.status == 1, subscription.transaction.offerDiscountType != "FREE_TRIAL",
                expires > Int64(now.timeIntervalSince1970 * 1000)
            else {
                return .failure(Failure(httpStatus: 403, errorCode: 4_030_004))
            }
            let recent = state.extensions.values.filter { $0.subscription == id && now.timeIntervalSince($0.at) < 365 * 86_400 }.count
            guard recent < 2 else { return .failure(Failure(httpStatus: 403, errorCode: 4_030_005)) }
            subscription.transaction.expiresDate = expires + Int64(days) * 86_400_000
            state.subscriptions[id] = subscription
            let answer: [String: Any] = [
                "effectiveDate": expires + Int64(days) * 86_400_000, "originalTransactionId": id, "success": true,
                "webOrderLineItemId": subscription.transaction.webOrderLineItemId ?? "",
            ]
            state.extensions[identifier] = (id, now, answer)
            return .success(answer)
        }
        switch outcome {
        case .success(let answer): return try Self.json(answer)
        case .failure(let failure): return Self.error(failure.httpStatus, failure.errorCode ?? 0, "Subscription extension refused.")
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: `productId` is required (4000023 otherwise); every
    /// active subscription of the product (in the storefronts, when given) outside a free offer is extended, the rest
    /// counted as failed.
    func extendAll(body: Data) throws -> Response {
        guard let (days, identifier, object) = extensionBody(body) else { return Self.error(400, 4_000_009, "Invalid extend request.") }
        guard let product = object["productId"] as? String, !product.isEmpty else { return Self.error(400, 4_000_023, "Invalid product id.") }
        let storefronts = object["storefrontCountryCodes"] as? [String]
        state.withLock { state in
            guard state.massExtensions[identifier] == nil else { return }
            var mass = MassExtension(productId: product, days: days, storefronts: storefronts)
            for (id, subscription) in state.subscriptions where subscription.transaction.productId == product && subscription.status == 1 {
                if let storefronts, !storefronts.contains(subscription.transaction.storefront ?? "") { continue }
                guard subscription.transaction.offerDiscountType != "FREE_TRIAL" else {
                    mass.failed += 1
                    continue
                }
                state.subscriptions[id]?.transaction.expiresDate = (subscription.transaction.expiresDate ?? 0) + Int64(days) * 86_400_000
                mass.succeeded += 1
            }
            state.massExtensions[identifier] = mass
        }
        return try Self.json(["requestIdentifier": identifier])
    }

    /// Every transaction the fake knows: the subscriptions' latest ones and the extra history.
    func transactions() -> [TransactionPayload] {
        state.withLock { state in state.subscriptions.values.map(\.transaction) + state.extraTransactions }
    }

    /// Records the request, checks its token, and plays any failure queued before answering.
    func guarded(_ request: Request, _ answer: () throws -> Response) throws -> Response {
        let authorized = request.headers[.authorization].map { checkToken($0) } ?? false
        let failure = state.withLock { state -> Failure? in
            state.requests.append("\(request.method) \(request.uri.path)")
            if !authorized {
                state.unauthorized += 1
                return nil
            }
            return state.failures.isEmpty ? nil : state.failures.removeFirst()
        }
        guard authorized else { return Response(status: .unauthorized) }
        if let failure {
            return failure.errorCode.map { Self.error(failure.httpStatus, $0, "injected failure") }
                ?? Response(status: .init(code: failure.httpStatus))
        }
        return try answer()
    }

    /// ES256 bearer token as Apple checks it: header, claims, lifetime, signature.
    func checkToken(_ header: String) -> Bool {
        guard header.hasPrefix("Bearer ") else { return false }
        let parts = header.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let head = Self.object(parts[0]), let claims = Self.object(parts[1]),
            let signatureBytes = Self.bytes(parts[2]), let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { return false }
        let now = Int64(Date().timeIntervalSince1970)
        guard head["alg"] as? String == "ES256", head["kid"] as? String == keyId, head["typ"] as? String == "JWT",
            claims["iss"] as? String == issuerId, claims["aud"] as? String == "appstoreconnect-v1",
            claims["bid"] as? String == bundleId, let iat = claims["iat"] as? Int64, let exp = claims["exp"] as? Int64,
            exp - iat <= 300, exp > now, iat <= now + 60
        else { return false }
        return publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
    }

    static func bytes(_ base64URL: String) -> Data? {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }

    static func object(_ base64URL: String) -> [String: Any]? {
        bytes(base64URL).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    static func json(_ object: Any) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))))
    }

    static func error(_ status: Int, _ code: Int64, _ message: String) -> Response {
        let body = (try? JSONSerialization.data(withJSONObject: ["errorCode": code, "errorMessage": message])) ?? Data()
        return Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
