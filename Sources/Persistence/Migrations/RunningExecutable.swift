import Foundation

/// The file this process runs from, its links resolved: where an install keeps `share/storekeeper` beside `bin`.
/// `/proc/self/exe` on Linux, not `CommandLine.arguments[0]`, which is only the name typed (`storekeeper`) when the
/// binary was found on `PATH`, and would be looked up in the working directory.
public enum RunningExecutable {
    public static let url: URL = {
        let linked = URL(fileURLWithPath: "/proc/self/exe")
        if FileManager.default.fileExists(atPath: linked.path) { return linked.resolvingSymlinksInPath() }
        return Bundle.main.executableURL?.resolvingSymlinksInPath()
            ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
    }()
}
