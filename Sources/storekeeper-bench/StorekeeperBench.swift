import ArgumentParser
import Foundation
import StorekeeperRuntime

/// `storekeeper-bench`: the benchmarks and drills, kept out of the production executable. They drive a `storekeeper`
/// built beside this one (or `STOREKEEPER_EXECUTABLE`) as child processes, as an operator would run it.
@main
struct StorekeeperBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekeeper-bench",
        abstract: "Benchmarks that print figures (never pass/fail; build with -c release for meaningful numbers) and reliability drills.",
        subcommands: [
            VerifyBenchmarkCommand.self, QueueBenchmarkCommand.self, EndToEndBenchmarkCommand.self, HostileBenchmarkCommand.self,
            EventsBenchmarkCommand.self, APIBenchmarkCommand.self, StorageBenchmarkCommand.self, StripeBenchmarkCommand.self,
            PlayBenchmarkCommand.self,
            ScaleBenchmarkCommand.self, ReplicaBenchmarkCommand.self, AnalyticsBenchmarkCommand.self, HoldExpiryBenchmarkCommand.self,
            RetentionBenchmarkCommand.self,
            DrillCommand.self,
        ]
    )

    /// Parses, runs, and turns every expected failure into one line on standard error and exit status 1.
    static func main() async {
        Interruption.install()
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch  where error is ExitCode || error is ValidationError || exitCode(for: error) == .success {
            exit(withError: error)
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("storekeeper-bench: \(CommandFailure.describe(error))\n".utf8))
            Foundation.exit(1)
        }
    }
}
