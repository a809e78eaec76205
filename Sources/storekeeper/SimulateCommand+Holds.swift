import ArgumentParser
import Foundation
import NIOHTTP1
import StorekeeperRuntime

extension SimulateCommand {
    /// The scenarios that play the app's service rather than Apple: a hold before a generation, its settle, its release.
    static let holdScenarios: Set<String> = ["hold", "settle", "release"]

    func validateHold() throws {
        let options =
            scenario == "hold" ? "--account, --meter, --amount, --key, --expires-in" : "--account and --key, or --hold; settle also --amount"
        if duration != nil || product != nil || to != nil || trial || originalTransactionId != nil || periodDays != nil {
            throw ValidationError("\(scenario) takes only \(options)")
        }
        switch scenario {
        case "hold":
            guard let account, !account.isEmpty else { throw ValidationError("hold needs --account ID") }
            guard meter != nil, let amount, amount > 0 else { throw ValidationError("hold needs --meter METER and --amount N (more than 0)") }
            if hold != nil { throw ValidationError("hold takes --key, not --hold: a new hold has no id yet") }
            if let expiresIn, !(1...86_400).contains(expiresIn) { throw ValidationError("--expires-in must be 1 to 86400 seconds") }
        default:
            if scenario == "settle" {
                guard let amount, amount >= 0 else { throw ValidationError("settle needs --amount N: what the work cost (0 or more)") }
            } else if amount != nil {
                throw ValidationError("release takes no --amount: all of the hold comes back")
            }
            if meter != nil || expiresIn != nil { throw ValidationError("\(scenario) takes only \(options)") }
            switch (key, hold) {
            case (nil, nil): throw ValidationError("\(scenario) needs --account ID --key KEY (the key the hold was taken with) or --hold ID")
            case (_?, _?): throw ValidationError("\(scenario) takes --key or --hold, not both")
            case (_?, nil) where account?.isEmpty ?? true: throw ValidationError("\(scenario) --key needs --account ID: keys are the account's")
            default: break
            }
        }
    }

    /// `simulate hold|settle|release`: the calls an app's service makes around AI work (docs/credits.md, "Holds"), with
    /// the dev server's API key, each answered on one line.
    func runHold(server: DevServer) async throws {
        guard server.apiKey != nil else { throw CommandFailure("no API key: start `storekeeper dev` first (it writes .storekeeper/dev.env)") }
        let encodedAccount = Self.pathSegment(account ?? "")
        let path: String
        var body: [String: Any] = [:]
        switch scenario {
        case "hold":
            path = "/v1/accounts/\(encodedAccount)/holds"
            body = ["meter": meter ?? "", "amount": amount ?? 0, "idempotencyKey": key ?? "simulate-\(UUID().uuidString.prefix(8).lowercased())"]
            if let expiresIn { body["expiresIn"] = expiresIn }
        default:
            let target = hold.map { "/v1/holds/\(Self.pathSegment($0))" } ?? "/v1/accounts/\(encodedAccount)/holds/\(Self.pathSegment(key ?? ""))"
            path = "\(target)/\(scenario)"
            if scenario == "settle" { body = ["amount": amount ?? 0] }
        }
        let (status, reply) = try await server.send(.POST, path, body: try JSONSerialization.data(withJSONObject: body), authorized: true)
        guard (200..<300).contains(status), let answer = try? JSONSerialization.jsonObject(with: reply) as? [String: Any] else {
            throw CommandFailure("Storekeeper answered \(status): \(String(decoding: reply, as: UTF8.self))")
        }
        let number = { (name: String) in (answer[name] as? NSNumber).map { "\($0)" } ?? "—" }
        if scenario == "hold", answer["state"] as? String != "held" {
            // The key took a hold before, which has ended since: its first answer, as it stands now.
            say(
                "the key \(body["idempotencyKey"] ?? "") took hold \(answer["id"] ?? "") before; it is \(answer["state"] ?? "") (charged "
                    + "\(number("charged")), returned \(number("returned"))): nothing new was held")
        } else if scenario == "hold" {
            say(
                "held \(number("amount")) \(answer["meter"] ?? "") of \(account ?? "") as hold \(answer["id"] ?? "") (key \(body["idempotencyKey"] ?? "")): "
                    + "\(number("remaining")) left to spend, released at \(answer["expiresAt"] ?? "") unless settled")
        } else {
            say(
                "\(answer["state"] ?? scenario) hold \(answer["id"] ?? ""): charged \(number("charged")), returned \(number("returned"))"
                    + ((answer["lapsed"] as? NSNumber).map { $0.int64Value > 0 ? ", lapsed \($0)" : "" } ?? ""))
        }
    }

    /// `text` as one percent-encoded path segment.
    private static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? text
    }
}
