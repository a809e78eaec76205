import ArgumentParser
import Foundation
import StorekeeperRuntime

/// A mistyped option named as such, with the option meant, even when the parse failed on something else first.
/// ArgumentParser says "Did you mean" only when the rest parses: `simulate subscribe --acount X` otherwise reads `X` as
/// the duration and answers "only advance takes a duration", and `grants add ID --tier T --reasn R` answers that
/// `--reason` is missing.
enum MistypedOptions {
    /// "Unknown option '--acount'. Did you mean '--account'?" for the first long option in `arguments` (after the
    /// executable's name) that the command they name does not take; nil when each is one it takes.
    static func problem(in arguments: [String], root: any ParsableCommand.Type) -> String? {
        let (command, index) = subcommand(in: arguments, root: root)
        let known = options(of: command, root: root)
        for argument in arguments[index...] {
            if argument == "--" { break }
            guard argument.hasPrefix("--"), argument.count > 2 else { continue }
            let option = String(argument.prefix { $0 != "=" })
            guard !known.contains(option) else { continue }
            // Nearest by edits; of two as near, the one sharing the longer beginning (`--acount`: `--account`, not `--amount`).
            let nearest = known.min {
                (EditDistance.between(option, $0), -$0.commonPrefix(with: option).count, $0) < (
                    EditDistance.between(option, $1), -$1.commonPrefix(with: option).count, $1
                )
            }
            let help = help(for: arguments, root: root)
            if let nearest, EditDistance.between(option, nearest) <= max(2, option.count / 4) {
                return "Unknown option '\(option)'. Did you mean '\(nearest)'? (see '\(help)')"
            }
            return "Unknown option '\(option)' (see '\(help)')"
        }
        return nil
    }

    /// The command `arguments` name (the root when their first word is none of its subcommands), and how many words
    /// name it.
    static func subcommand(in arguments: [String], root: any ParsableCommand.Type) -> (any ParsableCommand.Type, Int) {
        var command = root
        var index = 0
        while index < arguments.count, let next = command.configuration.subcommands.first(where: { name(of: $0) == arguments[index] }) {
            command = next
            index += 1
        }
        return (command, index)
    }

    /// The help to read for `arguments`: `storekeeper jobs show --help`.
    static func help(for arguments: [String], root: any ParsableCommand.Type) -> String {
        let (_, index) = subcommand(in: arguments, root: root)
        return ([root.configuration.commandName ?? ""] + arguments[..<index] + ["--help"]).joined(separator: " ")
    }

    static func name(of command: any ParsableCommand.Type) -> String {
        command.configuration.commandName ?? String(describing: command).lowercased()
    }

    /// The long options a command's help lists (`--account`, `--help`, …).
    static func options(of command: any ParsableCommand.Type, root: any ParsableCommand.Type) -> Set<String> {
        let help = root.helpMessage(for: command, columns: 10_000)
        var found: Set<String> = ["--help"]
        var word = ""
        for character in help + " " {
            if character.isLetter || character.isNumber || character == "-" {
                word.append(character)
            } else {
                if word.hasPrefix("--"), word.count > 2 { found.insert(word) }
                word = ""
            }
        }
        return found
    }
}
