import Foundation
import NIOCore
import NIOHTTP1

/// The third outside review's attacks (issue 51), each a row of `drill hostile`, on the second review's processes.
extension HostileDrill {
    /// `STOREKEEPER_ERASURE_KEY` of the drill's processes.
    static let erasureKey = "drill-erasure-key-0123456789abcdef0123456789"

    func thirdReviewRows(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        await erasedPrefixes(system, verdict: &verdict)
        await sharedAdjustmentKeys(system, verdict: &verdict)
        await craftedNotices(system, verdict: &verdict)
        await boundedAppleReads(system, verdict: &verdict)
    }

    private static var admin: [(String, String)] { [("Authorization", "Bearer \(adminKey)"), ("Content-Type", "application/json")] }

    /// What the admin API holds about an account, without what exporting itself adds (the time, its audit entries).
    private func holdings(_ system: SystemUnderTest, _ account: String) async -> String {
        let answer = await system.request(
            "/admin/accounts/\(account)/export", method: .POST, headers: Self.admin, body: ByteBuffer(string: "{}"), timeout: 30)
        guard var document = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] else {
            return "\(answer.status ?? 0)"
        }
        document.removeValue(forKey: "exportedAt")
        if var held = document["holdings"] as? [String: Any] {
            held["operatorActions"] = (held["operatorActions"] as? [[String: Any]])?.filter { $0["action"] as? String != "account.export" }
            document["holdings"] = held
        }
        return (try? JSONSerialization.data(withJSONObject: document, options: .sortedKeys)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Erase `x` beside `x2` (which spent free credits and holds a grant): 200, and `x2` holds exactly what it held;
    /// erase `X`, an operator's name and an id never seen: 404, nothing filed.
    func erasedPrefixes(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let base = "ea\(UUID().uuidString.prefix(6).lowercased())"
        for account in [base, base + "2"] {
            _ = await system.request(
                "/v1/accounts/\(account)/usage", method: .POST, headers: Self.service,
                body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "free-1"}"#))
            _ = await system.request(
                "/admin/accounts/\(account)/grants", method: .POST, headers: Self.admin,
                body: ByteBuffer(string: #"{"tier": "pro", "duration": "P7D", "reason": "ticket about \#(account)"}"#))
        }
        let before = await holdings(system, base + "2")
        let erased = await system.request(
            "/admin/accounts/\(base)/erase", method: .POST, headers: Self.admin, body: ByteBuffer(string: #"{"confirm": "\#(base)"}"#), timeout: 60)
        let after = await holdings(system, base + "2")
        var nothing: [String] = []
        for id in [base.uppercased(), "support1", "never-\(base)"] {
            let answer = await system.request(
                "/admin/accounts/\(id)/erase", method: .POST, headers: Self.admin, body: ByteBuffer(string: #"{"confirm": "\#(id)"}"#), timeout: 60)
            if answer.status != 404 { nothing.append("\(id): \(answer.status.map(String.init) ?? "none")") }
        }
        let filed = (try? await system.count("SELECT count(*) FROM erased_accounts")) ?? -1
        verdict.check(
            erased.status == 200 && before == after && before.count > 100 && nothing.isEmpty && filed == 1,
            "erasing \(base) beside \(base)2: \(erased.status.map(String.init) ?? "none"), \(base)2's rows unchanged (\(before == after)); "
                + "\(base.uppercased()), an operator's name and an id never seen: 404, one tombstone filed (\(filed))" + Self.listed(nothing))
    }

    /// The same adjustment key for two accounts: each gets its credits (a global key answered "posted" for the second
    /// while posting nothing).
    func sharedAdjustmentKeys(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let suffix = UUID().uuidString.prefix(8)
        var topUps: [Int?] = []
        for account in ["adj\(suffix)", "adj\(suffix)b"] {
            _ = await system.request(
                "/admin/accounts/\(account)/credits", method: .POST, headers: Self.admin,
                body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 50, "reason": "outage", "idempotencyKey": "shared-\#(suffix)"}"#))
            let status = await system.request("/v1/accounts/\(account)/status", headers: Self.service)
            let object = try? JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any]
            topUps.append(((object?["credits"] as? [String: Any])?["ai_requests"] as? [String: Any])?["topUp"] as? Int)
        }
        verdict.check(topUps == [50, 50], "one adjustment key sent for two accounts: each holds its 50 credits (\(topUps))")
    }

    /// A dashboard link carrying its own notice (`erased=Erased: done`, with U+202E): the page does not show it.
    func craftedNotices(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        let basic = ("Authorization", "Basic " + Data(":\(Self.adminKey)".utf8).base64EncodedString())
        let page = await system.request(
            "/admin?account=someone&erased=Erased%3A%20all%20done%E2%80%AE&appStore=Extended%20by%2090%20days", headers: [basic])
        verdict.check(
            page.status == 200 && !page.body.contains("all done") && !page.body.contains("Extended by 90 days"),
            "a crafted dashboard link's notices are not shown (\(page.status.map(String.init) ?? "none"))")
    }

    /// One key asking Apple 25 times in a row through the reads that do: refused with 429 and `Retry-After` once its
    /// allowance is spent (Apple here is a server that is not Apple, which answers at once).
    func boundedAppleReads(_ system: SystemUnderTest, verdict: inout DrillVerdict) async {
        var statuses: [UInt] = []
        var retryAfter: String?
        for _ in 0..<25 {
            let answer = await system.request("/admin/accounts/someone/apple-refunds", headers: Self.admin, timeout: 60)
            statuses.append(answer.status ?? 0)
            if answer.status == 429 { retryAfter = answer.headers.first(name: "Retry-After") }
        }
        let limited = statuses.filter { $0 == 429 }.count
        verdict.check(
            limited >= 5 && retryAfter != nil,
            "one key asking Apple 25 times in a row: \(limited) refused with 429 and Retry-After \(retryAfter ?? "none")")
    }
}
