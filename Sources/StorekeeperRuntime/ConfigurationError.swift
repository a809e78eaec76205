/// Everything wrong with the configuration, reported at once.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let problems: [String]

    public init(problems: [String]) { self.problems = problems }

    public var description: String { "invalid configuration: " + problems.joined(separator: "; ") }
}
