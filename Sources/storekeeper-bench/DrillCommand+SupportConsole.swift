import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension HostileDrill {
    /// The support console, analytics and personal-data routes fed what a stranger would send: a NUL, absurd numbers,
    /// an erasure nobody confirmed, a storefront list far over Apple's, an order id Apple cannot answer for. Each is a
    /// clear 4xx (or, for the order id, a 200 saying Apple failed) within its deadline, and nothing is erased.
    func supportConsoleInputs(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let admin = [("Authorization", "Bearer \(Self.adminKey)"), ("Content-Type", "application/json")]
        let storefronts = "[" + Array(repeating: #""USA""#, count: 201).joined(separator: ",") + "]"
        let requests: [(String, String, HTTPMethod, String?, UInt)] = [
            ("search with a NUL", "/admin/search?q=a%00b", .GET, nil, 400),
            ("audit by an operator with a NUL", "/admin/audit?operator=%00", .GET, nil, 400),
            ("audit before a negative id", "/admin/audit?before=-1", .GET, nil, 400),
            ("a chart of a product with a NUL", "/admin/analytics/mrr?product=%00", .GET, nil, 400),
            ("a chart of usage by a tier for MRR", "/admin/analytics/mrr?tier=pro", .GET, nil, 400),
            ("a chart of 10,000 years", "/admin/analytics/mrr?from=0001-01-01", .GET, nil, 400),
            ("erasure not confirmed", "/admin/accounts/drill-erase/erase", .POST, "{}", 400),
            ("erasure confirmed for another id", "/admin/accounts/drill-erase/erase", .POST, #"{"confirm": "drill-erase "}"#, 400),
            ("an extension of 1e9 days", "/admin/accounts/drill-erase/extensions", .POST, #"{"days": 1000000000, "reason": "other"}"#, 400),
            (
                "an extension with a NUL in its request id", "/admin/accounts/drill-erase/extensions", .POST,
                #"{"days": 3, "reason": "other", "requestIdentifier": "a\u0000b"}"#, 400
            ),
            ("an extension for a made-up reason", "/admin/accounts/drill-erase/extensions", .POST, #"{"days": 3, "reason": "because"}"#, 400),
            (
                "a mass extension over 201 storefronts", "/admin/extensions", .POST,
                #"{"productId": "pro.monthly", "days": 3, "reason": "other", "dryRun": true, "storefrontCountryCodes": \#(storefronts)}"#, 400
            ),
            ("a mass extension's status under a made-up id", "/admin/extensions/%00", .GET, nil, 404),
            (
                "credits taken back from nobody", "/admin/accounts/drill-erase/credits", .POST,
                #"{"meter": "ai_requests", "amount": -5, "reason": "x"}"#, 409
            ),
        ]
        var wrong: [String] = []
        for (what, path, method, body, expected) in requests {
            let answer = await system.request(path, method: method, headers: admin, body: body.map { ByteBuffer(string: $0) }, timeout: 30)
            if answer.status != expected { wrong.append("\(what): \(answer.status.map(String.init) ?? "none") (\(expected))") }
        }
        // An order id, with Apple's API pointed at a server that is not Apple: answered, saying so.
        let order = await system.request("/admin/search?q=MK5TTTVWJH", headers: admin, timeout: 120)
        if order.status != 200 || !order.body.contains(#""orderLookup""#) {
            wrong.append("order id with Apple unreachable: \(order.status.map(String.init) ?? "none")")
        }
        verdict.check(
            wrong.isEmpty,
            "support console, analytics and erasure fed \(requests.count + 1) malformed or absurd requests: each a clear answer" + Self.listed(wrong))
    }
}
