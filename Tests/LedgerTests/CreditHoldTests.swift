import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Subscriptions
import Testing

@testable import Application
@testable import IntegrationSupport

/// Holds through the HTTP API on real PostgreSQL, judged by what the customer would see: the status's `remaining`,
/// the hold's own answer, and what a plain spend can still take. Expectations are written from the contract (issue 53
/// and docs/credits.md), not from the code: a hold takes what a spend would, keeps it from everyone else, and gives back
/// what the work did not cost.
@Suite("Credit holds: hold, settle, release, expire, on real PostgreSQL")
struct CreditHoldTests {
    static let environment = ["STOREKEEPER_ADMIN_KEYS": "admin-key-holds-000001"]
    static let service: HTTPFields = [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"]
    static let admin: HTTPFields = [.authorization: "Bearer admin-key-holds-000001", .contentType: "application/json"]

    static func post(_ client: any TestClientProtocol, _ uri: String, _ body: String, headers: HTTPFields = service) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func hold(_ client: any TestClientProtocol, _ account: String, _ meter: String, _ amount: Int, key: String, expiresIn: Int? = nil)
        async throws -> TestResponse
    {
        let expiry = expiresIn.map { #", "expiresIn": \#($0)"# } ?? ""
        return try await post(
            client, "/v1/accounts/\(account)/holds", #"{"meter": "\#(meter)", "amount": \#(amount), "idempotencyKey": "\#(key)"\#(expiry)}"#)
    }

    /// Tops an account's meter up by `amount` through support's credit adjustment.
    /// Ends `hold`: settled for `charge`, or released when it is 0.
    static func end(_ client: any TestClientProtocol, hold: String, charge: Int64) async throws -> TestResponse {
        charge > 0
            ? try await post(client, "/v1/holds/\(hold)/settle", #"{"amount": \#(charge)}"#)
            : try await post(client, "/v1/holds/\(hold)/release", "")
    }

    static func topUp(_ client: any TestClientProtocol, _ account: String, _ meter: String, _ amount: Int) async throws {
        let response = try await post(
            client, "/admin/accounts/\(account)/credits",
            #"{"meter": "\#(meter)", "amount": \#(amount), "reason": "test", "idempotencyKey": "top-\#(meter)"}"#,
            headers: admin)
        #expect(response.status == .created, "\(String(buffer: response.body))")
    }

    static func remaining(_ client: any TestClientProtocol, _ account: String, _ meter: String) async throws -> Int64? {
        try await credits(client, account, meter)?.remaining
    }

    static func held(_ client: any TestClientProtocol, _ account: String, _ meter: String) async throws -> Int64? {
        try await credits(client, account, meter)?.held
    }

    static func credits(_ client: any TestClientProtocol, _ account: String, _ meter: String) async throws -> MeterCreditsAnswer? {
        let status = try await client.getWithKey("/v1/accounts/\(account)/status")
        return try status.answer(StatusAnswer.self).credits[meter]
    }

    @Test("50 parallel holds of 1 against 10 credits: exactly 10 are held, 40 are 402; a spend then finds nothing; a release gives it back")
    func parallelHolds() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "holder-\(UUID().uuidString.prefix(8).lowercased())"
                // exports: the free month's 3, and 7 topped up.
                try await Self.topUp(client, account, "exports", 7)
                #expect(try await Self.remaining(client, account, "exports") == 10)
                let answers = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            let response = try await Self.hold(client, account, "exports", 1, key: "p\(index)")
                            return (response.status, response.status == .created ? try response.answer(CreditHoldAnswer.self).id : nil)
                        }
                    }
                    return try await group.reduce(into: [(HTTPResponse.Status, String?)]()) { $0.append($1) }
                }
                #expect(answers.filter { $0.0 == .created }.count == 10)
                #expect(answers.filter { $0.0.code == 402 }.count == 40)
                #expect(try await Self.remaining(client, account, "exports") == 0)
                #expect(try await Self.held(client, account, "exports") == 10, "the status shows what is held beside what is left")
                let spend = try await Self.post(
                    client, "/v1/accounts/\(account)/usage", #"{"meter": "exports", "amount": 1, "idempotencyKey": "s1"}"#)
                #expect(spend.status.code == 402, "held credits are kept from spends")
                #expect(try await harness.count("SELECT count(*) FROM credit_holds WHERE state = 'held'") == 10)
                let one = try #require(answers.compactMap(\.1).first)
                let released = try await Self.post(client, "/v1/holds/\(one)/release", "")
                #expect(try released.status == .ok && released.answer(CreditHoldAnswer.self).returned == 1, "\(String(buffer: released.body))")
                #expect(try await Self.remaining(client, account, "exports") == 1)
                #expect(try await Self.held(client, account, "exports") == 9)
            }
        }
    }

    @Test(
        "a hold of 8 over the day's 5 and a top-up, settled for 4: the day's credits pay, 4 come back, a repeat answers the first settle, any other end is 409"
    )
    func settlePart() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "settler-\(UUID().uuidString.prefix(8).lowercased())"
                try await Self.topUp(client, account, "ai_requests", 10)
                #expect(try await Self.remaining(client, account, "ai_requests") == 15)
                let held = try await Self.hold(client, account, "ai_requests", 8, key: "gen-1")
                #expect(
                    try held.status == .created && held.answer(CreditHoldAnswer.self).remaining == 7
                        && held.answer(CreditHoldAnswer.self).state == "held",
                    "\(String(buffer: held.body))")
                let id = try held.answer(CreditHoldAnswer.self).id
                #expect(try await Self.remaining(client, account, "ai_requests") == 7)
                let settled = try await Self.post(client, "/v1/holds/\(id)/settle", #"{"amount": 4}"#)
                #expect(
                    try settled.status == .ok && settled.answer(CreditHoldAnswer.self).charged == 4
                        && settled.answer(CreditHoldAnswer.self).returned == 4,
                    "\(String(buffer: settled.body))")
                #expect(try await Self.remaining(client, account, "ai_requests") == 11)
                #expect(try await Self.held(client, account, "ai_requests") == 0)
                let again = try await Self.post(client, "/v1/holds/\(id)/settle", #"{"amount": 4}"#)
                #expect(try again.status == .ok && again.answer(CreditHoldAnswer.self).charged == 4)
                #expect(try await Self.post(client, "/v1/holds/\(id)/settle", #"{"amount": 5}"#).status == .conflict)
                let late = try await Self.post(client, "/v1/holds/\(id)/release", "")
                #expect(try late.status == .conflict && late.answer(ErrorAnswer.self).error == "hold_ended")
                #expect(try await Self.remaining(client, account, "ai_requests") == 11, "nothing given back twice")
                let read = try await client.getWithKey("/v1/holds/\(id)")
                #expect(try read.answer(CreditHoldAnswer.self).state == "settled" && read.answer(CreditHoldAnswer.self).lapsed == 0)
                // By the key that took it, as the service knows it: the same hold, the same first answer.
                let byKey = try await Self.post(client, "/v1/accounts/\(account)/holds/gen-1/settle", #"{"amount": 4}"#)
                #expect(
                    try byKey.status == .ok && byKey.answer(CreditHoldAnswer.self).id == id && byKey.answer(CreditHoldAnswer.self).charged == 4,
                    "\(String(buffer: byKey.body))")
                #expect(try await Self.post(client, "/v1/accounts/\(account)/holds/gen-1/release", "").status == .conflict)
                #expect(try await Self.post(client, "/v1/accounts/\(account)/holds/no-such-key/release", "").status == .notFound)
                #expect(
                    try await Self.post(client, "/v1/accounts/other-\(account)/holds/gen-1/release", "").status == .notFound,
                    "another account's key is not this hold")
                // More than held is refused and changes nothing.
                let other = try await Self.hold(client, account, "ai_requests", 2, key: "gen-2")
                let over = try await Self.post(client, "/v1/holds/\(try other.answer(CreditHoldAnswer.self).id)/settle", #"{"amount": 3}"#)
                #expect(try over.status == .unprocessableContent && over.answer(ErrorAnswer.self).error == "amount_over_hold")
                #expect(try await Self.remaining(client, account, "ai_requests") == 9)
                // Analytics count what was charged, as usage.
                #expect(try await harness.count("SELECT coalesce(sum(-delta), 0)::int FROM credit_ledger WHERE reason = 'usage'") == 4)
                // The operator's account page: 2 held beside the remaining 9, each hold with its outcome, and both in the timeline.
                let basic = "Basic " + Data("admin:admin-key-holds-000001".utf8).base64EncodedString()
                let page = String(
                    buffer: try await client.execute(uri: "/admin?account=\(account)", method: .get, headers: [.authorization: basic]).body)
                #expect(page.contains("<td>ai_requests</td><td>9</td><td>2</td>"), "the meter row: remaining 9, held 2")
                #expect(page.contains("<h3>Holds</h3>") && page.contains("<code>gen-1</code>") && page.contains("<code>gen-2</code>"))
                #expect(page.contains(">settled</span></td><td>4</td><td>4</td><td>0</td>"), "gen-1 settled: charged 4, returned 4, lapsed 0")
                #expect(page.contains("settled hold of 8 ai_requests") && page.contains("held 2 ai_requests"), "the timeline")
            }
        }
    }

    @Test(
        "the same key answers the same hold; reused for another amount or expiry 422; too little 402 with nothing held; bad input 400; unknown hold 404"
    )
    func idempotencyAndInput() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "keyed-\(UUID().uuidString.prefix(8).lowercased())"
                let first = try await Self.hold(client, account, "ai_requests", 2, key: "k")
                let second = try await Self.hold(client, account, "ai_requests", 2, key: "k")
                #expect(
                    try first.status == .created && second.status == .created
                        && first.answer(CreditHoldAnswer.self).id == second.answer(CreditHoldAnswer.self).id)
                #expect(try await Self.hold(client, account, "ai_requests", 3, key: "k").status == .unprocessableContent)
                // The default expiry is 900 s: the same body with it written out is the same request, another is not.
                #expect(try await Self.hold(client, account, "ai_requests", 2, key: "k", expiresIn: 900).status == .created)
                #expect(try await Self.hold(client, account, "ai_requests", 2, key: "k", expiresIn: 60).status == .unprocessableContent)
                let short = try await Self.hold(client, account, "ai_requests", 4, key: "big")
                #expect(try short.status.code == 402 && short.answer(ErrorAnswer.self).error == "insufficient_credits")
                #expect(try await Self.remaining(client, account, "ai_requests") == 3)
                for (body, code) in [
                    (#"{"meter": "nope", "amount": 1, "idempotencyKey": "x"}"#, "unknown_meter"),
                    (#"{"meter": "ai_requests", "amount": 0, "idempotencyKey": "x"}"#, "invalid_amount"),
                    (#"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "x", "expiresIn": 86401}"#, "invalid_expires_in"),
                    (#"{"meter": "ai_requests", "amount": 1}"#, "missing_idempotency_key"),
                    (#"{"meter": "ai_requests", "amount": 1000000001, "idempotencyKey": "x"}"#, "invalid_amount"),
                    (#"{"meter": "ai_requests", "amount": 9223372036854775807, "idempotencyKey": "x"}"#, "invalid_amount"),
                    ("[]", "bad_request"),
                ] {
                    let response = try await Self.post(client, "/v1/accounts/\(account)/holds", body)
                    #expect(
                        try response.status == .badRequest && response.answer(ErrorAnswer.self).error == code,
                        "\(body): \(String(buffer: response.body))")
                }
                #expect(try await client.getWithKey("/v1/holds/\(UUID().uuidString)").status == .notFound)
                #expect(try await Self.post(client, "/v1/holds/\(UUID().uuidString)/release", "").status == .notFound)
                #expect(try await Self.post(client, "/v1/holds/not-a-uuid/release", "").status == .badRequest)
                #expect(try await harness.count("SELECT count(*) FROM credit_holds") == 1)
            }
        }
    }

    @Test("a hold not ended by its expiry is released by the job; settling it then is 409 and charges nothing")
    func expiry() async throws {
        try await StorekeeperHarness.run(environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "expiring-\(UUID().uuidString.prefix(8).lowercased())"
                let held = try await Self.hold(client, account, "ai_requests", 3, key: "e", expiresIn: 1)
                let id = try held.answer(CreditHoldAnswer.self).id
                #expect(try await Self.remaining(client, account, "ai_requests") == 2)
                try await eventually("the hold to expire") {
                    try await client.getWithKey("/v1/holds/\(id)").answer(CreditHoldAnswer.self).state == "expired"
                }
                #expect(try await Self.remaining(client, account, "ai_requests") == 5)
                let late = try await Self.post(client, "/v1/holds/\(id)/settle", #"{"amount": 3}"#)
                #expect(try late.status == .conflict && late.answer(ErrorAnswer.self).error == "hold_ended")
                #expect(try await Self.remaining(client, account, "ai_requests") == 5)
            }
        }
    }

    @Test(
        "a hold of the day's credits released the next day: they lapse with their day, as unspent ones do; the new day is whole, and `held` counts only what the hold keeps out of it"
    )
    func closedBucketLapses() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(worker: false, environment: Self.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "lapsing-\(UUID().uuidString.prefix(8).lowercased())"
                // At noon of a UTC day: held then for a day, the hold outlives the next day's first minute, whenever
                // the test runs (from the real time, it did not in the first minute after midnight).
                let noon = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 43_200
                clock.set(Date(timeIntervalSince1970: noon))
                try await Self.topUp(client, account, "ai_requests", 2)
                let held = try await Self.hold(client, account, "ai_requests", 6, key: "d", expiresIn: 86_400)
                let id = try held.answer(CreditHoldAnswer.self).id
                #expect(try await Self.remaining(client, account, "ai_requests") == 1)
                #expect(try await Self.held(client, account, "ai_requests") == 6)
                // Just past the next UTC midnight, where the day's quota ends, well before the hold's expiry.
                clock.set(Date(timeIntervalSince1970: noon + 43_200 + 60))
                // The status as a customer reads it before the hold ends: the new day's 5 and the top-up credit not held
                // are left, and the hold keeps only its top-up credit out — yesterday's 5 keep nothing out of today.
                #expect(try await Self.remaining(client, account, "ai_requests") == 6)
                let heldAfter = try await Self.held(client, account, "ai_requests")
                #expect(heldAfter == 1, "\(String(describing: heldAfter))")
                let released = try await Self.post(client, "/v1/holds/\(id)/release", "")
                #expect(released.status == .ok, "\(String(buffer: released.body))")
                #expect(
                    try released.answer(CreditHoldAnswer.self).lapsed == 5 && released.answer(CreditHoldAnswer.self).returned == 1,
                    "\(String(buffer: released.body))")
                #expect(try await Self.remaining(client, account, "ai_requests") == 7, "the new day's 5 and both top-up credits")
            }
        }
    }

    @Test("an unlimited meter's hold holds nothing and leaves the status alone; settled for part, a repeat answers the first settle")
    func unlimitedMeter() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "unlimited-\(UUID().uuidString.prefix(8).lowercased())"
                let grant = try await Self.post(
                    client, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "duration": "P7D", "reason": "test"}"#, headers: Self.admin)
                #expect(grant.status == .created, "\(String(buffer: grant.body))")
                let held = try await Self.hold(client, account, "exports", 1_000_000_000, key: "u")
                #expect(try held.status == .created && held.answer(CreditHoldAnswer.self).remaining == nil, "\(String(buffer: held.body))")
                let second = try await Self.hold(client, account, "exports", 1_000_000_000, key: "u2")
                #expect(second.status == .created, "a second hold of the most one may hold: the status still answers")
                #expect(try await Self.held(client, account, "exports") == 2_000_000_000)
                let id = try held.answer(CreditHoldAnswer.self).id
                for _ in 0..<2 {
                    let settled = try await Self.post(client, "/v1/holds/\(id)/settle", #"{"amount": 3}"#)
                    #expect(try settled.status == .ok && settled.answer(CreditHoldAnswer.self).charged == 3, "\(String(buffer: settled.body))")
                }
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'hold%'") == 0)
            }
        }
    }

    @Test(
        "a hold taken while its meter was unlimited is held while it stays so; once the grant ends it keeps nothing out of remaining and counts nothing, and everything remaining can be spent"
    )
    func unlimitedHoldOutlivesItsTier() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "was-unlimited-\(UUID().uuidString.prefix(8).lowercased())"
                // exports: the free month's 3, and 7 topped up.
                try await Self.topUp(client, account, "exports", 7)
                let grant = try await Self.post(
                    client, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "duration": "P7D", "reason": "test"}"#, headers: Self.admin)
                #expect(grant.status == .created, "\(String(buffer: grant.body))")
                let held = try await Self.hold(client, account, "exports", 40, key: "while-pro")
                #expect(held.status == .created, "\(String(buffer: held.body))")
                #expect(try await Self.held(client, account, "exports") == 40, "held while the meter is unlimited")
                let ended = try await client.execute(
                    uri: "/admin/grants/\(try grant.answer(GrantAnswer.self).id)", method: .delete, headers: Self.admin)
                #expect(ended.status == .ok, "\(String(buffer: ended.body))")
                // Counted again: the 10 the account was given, none of it held (the hold took from no bucket).
                let counted = try #require(try await Self.credits(client, account, "exports"))
                #expect(counted.remaining == 10 && counted.held == 0, "remaining \(String(describing: counted.remaining)), held \(counted.held)")
                let spent = try await Self.post(
                    client, "/v1/accounts/\(account)/usage", #"{"meter": "exports", "amount": 10, "idempotencyKey": "all"}"#)
                #expect(spent.status == .ok, "\(String(buffer: spent.body))")
                let after = try #require(try await Self.credits(client, account, "exports"))
                #expect(after.remaining == 0 && after.held == 0, "held + spent + remaining is the 10 given")
                // Its settle charges what the work cost and deducts nothing, as an unlimited meter's does.
                let settled = try await Self.post(client, "/v1/holds/\(try held.answer(CreditHoldAnswer.self).id)/settle", #"{"amount": 3}"#)
                #expect(try settled.status == .ok && settled.answer(CreditHoldAnswer.self).charged == 3, "\(String(buffer: settled.body))")
                #expect(try await Self.remaining(client, account, "exports") == 0)
            }
        }
    }

    @Test(
        "another process's hold of an unlimited meter (it posts nothing) and its settle reach this process's cached status by NOTIFY, as does a hold written as the release before wrote it"
    )
    func heardFromAnotherProcess() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "elsewhere-\(UUID().uuidString.prefix(8).lowercased())"
                let grant = try await Self.post(
                    client, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "duration": "P7D", "reason": "test"}"#, headers: Self.admin)
                #expect(grant.status == .created, "\(String(buffer: grant.body))")
                let cache = harness.components.statusCache
                let id = try #require(AccountID(account))
                try await eventually("the account-change listener to be connected") { cache.isListening }
                // The status cached, as every read below but the first after a NOTIFY is: an entry is served for 30 s
                // (the cache's maximum age) unless dropped, and each wait below is half that.
                try await eventually("the status cached") {
                    try await Self.held(client, account, "exports") == 0 && cache.inputs(of: id) != nil
                }
                // Another `serve`: holds of its own on the same database, and no way to drop this process's entries but
                // the database's NOTIFY.
                let components = harness.components
                let elsewhere = CreditHolds(
                    client: harness.client, ledger: components.credits, queue: components.queue, events: nil, cache: nil, logger: TestDatabase.logger)
                guard
                    case .held = try await elsewhere.hold(
                        .init(account: id, meter: "exports", amount: 5, idempotencyKey: "x", expiresIn: 900), now: Date())
                else { throw TestSetupError("the other process's hold was refused") }
                try await eventually(timeout: .seconds(15), "the hold's NOTIFY to drop the cached status") {
                    try await Self.held(client, account, "exports") == 5
                }
                guard case .ended = try await elsewhere.settle(.key(id, "x"), amount: 2, now: Date()) else {
                    throw TestSetupError("the other process's settle was refused")
                }
                try await eventually(timeout: .seconds(15), "the settle's NOTIFY to drop the cached status") {
                    try await Self.held(client, account, "exports") == 0 && cache.inputs(of: id) != nil
                }
                // A hold as a process of the release before writes it, with a plain statement rather than sql/0051's
                // call: heard by the row trigger.
                try await harness.client.query(
                    """
                    INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                    VALUES (gen_random_uuid(), \(account), 'before', 'exports', 4, '[]', now(), now() + interval '15 minutes')
                    """, logger: TestDatabase.logger)
                try await eventually(timeout: .seconds(15), "the row trigger's NOTIFY to drop the cached status") {
                    try await Self.held(client, account, "exports") == 4
                }
            }
        }
    }

    @Test("a hold open when its account is erased still ends: its credits go back to the top-up, renamed with the account")
    func erasedWhileHeld() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = "erased-holder-\(UUID().uuidString.prefix(8).lowercased())"
                try await Self.topUp(client, account, "exports", 7)
                let held = try await Self.hold(client, account, "exports", 6, key: "e")
                let id = try held.answer(CreditHoldAnswer.self).id
                let erased = try await Self.post(client, "/admin/accounts/\(account)/erase", #"{"confirm": "\#(account)"}"#, headers: Self.admin)
                #expect(erased.status == .ok, "\(String(buffer: erased.body))")
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_holds WHERE debits::text LIKE '%\(account)%'") == 0,
                    "the debits name the account")
                let released = try await Self.post(client, "/v1/holds/\(id)/release", "")
                #expect(
                    try released.status == .ok && released.answer(CreditHoldAnswer.self).returned == 6
                        && released.answer(CreditHoldAnswer.self).lapsed == 0,
                    "\(String(buffer: released.body))")
            }
        }
    }
}
