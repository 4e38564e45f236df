/// A configuration value that cannot be used, naming the option both ways it can be given.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// `--port (YEDI_PORT)`
    public let option: String
    public let problem: String

    public init(option: String, problem: String) {
        self.option = option
        self.problem = problem
    }

    public var description: String { "\(option): \(problem)" }
}
