import Foundation
import Logging
import StorekeeperRuntime

/// A live install for the upgrade and restore drills: migrated, loaded with generated subscribers, serving and working.
enum LoadedInstall {
    /// Migrates, loads `subscribers` (the scale benchmark's generator), stores the running release's own derivation of
    /// them, starts `serve` and `work`, and returns up to 20,000 active subscribers' accounts to read and spend from.
    ///
    /// The generator writes rows as a year of traffic would leave them, not each derived from its facts by this exact
    /// release; `replay --all --write` stores the release's derivation first, so that a difference a later `replay`
    /// finds is the drill's.
    static func start(_ system: SystemUnderTest, subscribers: Int, logger: Logger) async throws -> [String] {
        try system.migrate()
        say("  loading \(subscribers) subscribers …")
        let load = try await ScaleLoader.fromBundle().load(subscribers: subscribers, now: Date(), url: system.databaseURL, logger: logger)
        let clock = ContinuousClock()
        let settleStarted = clock.now
        let settle = try ChildProcess.run(system.executable, ["replay", "--all", "--write"], environment: system.environment)
        guard settle.status == 0 else {
            throw CommandFailure("replay --all --write of the generated history failed: \(settle.output.split(separator: "\n").last ?? "")")
        }
        say(
            String(
                format: "  loaded in %.1f s, VACUUM ANALYZE %.1f s, CHECKPOINT %.1f s, replay --all --write %.1f s", load.load, load.vacuum,
                load.checkpoint, (clock.now - settleStarted).seconds))
        try await system.startServe()
        try system.startWorker()
        let accounts = try await ScaleLoader.accounts(states: ["active"], count: 20_000, url: system.databaseURL, logger: logger)
        guard !accounts.isEmpty else { throw CommandFailure("no active generated subscriber to read and spend from") }
        return accounts
    }

    /// `replay --all` of `system`'s release on its database: `nil` when it finds no difference, else what it said.
    static func replayDifference(_ system: SystemUnderTest) throws -> String? {
        let replay = try ChildProcess.run(system.executable, ["replay", "--all"], environment: system.environment)
        return replay.status == 0 ? nil : "status \(replay.status): \(replay.output.split(separator: "\n").last ?? "")"
    }

    /// Each account's status answer as parsed JSON (so key order does not count); `nil` when it was not a 200.
    static func statuses(of accounts: [String], from system: SystemUnderTest) async -> [NSDictionary?] {
        var answers: [NSDictionary?] = []
        for account in accounts {
            let answer = await system.request("/v1/accounts/\(account)/status", headers: [("Authorization", "Bearer bench")])
            answers.append(answer.status == 200 ? (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? NSDictionary : nil)
        }
        return answers
    }

    /// Checks that `after` answers the status of every account of `sample` as `before` did (answers read from
    /// `before` first).
    static func checkSameStatuses(
        _ sample: [String], before: [NSDictionary?], after: SystemUnderTest, _ description: String, into verdict: inout DrillVerdict
    ) async {
        let answers = await statuses(of: sample, from: after)
        let differing = sample.indices.filter { before[$0] != answers[$0] || answers[$0] == nil }
        verdict.check(
            differing.isEmpty,
            description + (differing.isEmpty ? "" : " — \(differing.count) differ, first \(sample[differing[0]])"))
    }

    /// A moment as PostgreSQL reads it, a second early (the intake's clock and ours are the same machine's).
    static func timestamp(_ date: Date) -> String { ISO8601DateFormatter().string(from: date.addingTimeInterval(-1)) }
}
