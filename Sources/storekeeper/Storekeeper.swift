import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import StorekeeperRuntime

/// `storekeeper`: the executable of every Storekeeper process and operator command (benchmarks and drills are
/// `storekeeper-bench`'s).
@main
struct Storekeeper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekeeper",
        abstract: "App Store subscription lifecycle and usage credits, self-hosted.",
        subcommands: [
            MigrateCommand.self, ServeCommand.self, WorkCommand.self, DevCommand.self, SimulateCommand.self,
            VerifyCommand.self, JobsCommand.self, EventsCommand.self, AccountsCommand.self, GrantsCommand.self, StripeCommand.self,
            GoogleCommand.self, ReplayCommand.self, BackfillCommand.self, AppleCommand.self,
        ]
    )

    /// Parses, runs, and turns every expected failure into one line on standard error and exit status 1.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            if let first = CommandLine.arguments.dropFirst().first, first == "bench" || first == "drill" {
                // Where they were until the production binary stopped carrying them.
                let instead = first == "bench" ? "storekeeper-bench <benchmark>" : "storekeeper-bench drill <drill>"
                try? FileHandle.standardError.write(
                    contentsOf: Data("storekeeper: benchmarks and drills are \(instead) now (see the README's Commands)\n".utf8))
                Foundation.exit(64)
            }
            if exitCode(for: error) != .success,
                let mistyped = MistypedOptions.problem(in: Array(CommandLine.arguments.dropFirst()), root: Storekeeper.self)
            {
                try? FileHandle.standardError.write(contentsOf: Data("Error: \(mistyped)\n".utf8))
                Foundation.exit(ExitCode.validationFailure.rawValue)
            }
            usageFailure(error)
        }
        if command is ServeCommand || command is WorkCommand {
            // The long-running processes run their tasks on NIO's event loops, where their sockets are: a request or
            // a query answer then continues on the thread that read it instead of hopping to Dispatch's pool and back.
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
            AllocatorSettings.keepFreedMemory()
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch let error as ExitCode {
            exit(withError: error)
        } catch let error as ValidationError {
            usageFailure(error)
        } catch  where exitCode(for: error) == .success {
            exit(withError: error)  // `--help` on a subcommand reaches here as ArgumentParser's own error: print the help
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("storekeeper: \(CommandFailure.describe(error))\n".utf8))
            Foundation.exit(1)
        }
    }

    /// A usage error as one line and exit 64, as every other failure is one line: ArgumentParser's own answer adds the
    /// usage block of the command (the root's, for an argument a subcommand's parser refused) and a hint. `--help`,
    /// which reaches here as an error too, prints the help as ArgumentParser does.
    static func usageFailure(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        guard code != .success else { exit(withError: error) }
        let help = MistypedOptions.help(for: Array(CommandLine.arguments.dropFirst()), root: Storekeeper.self)
        let message = message(for: error).trimmingCharacters(in: .whitespacesAndNewlines)
        try? FileHandle.standardError.write(contentsOf: Data("Error: \(message) (see '\(help)')\n".utf8))
        Foundation.exit(code.rawValue)
    }
}
