import Foundation

/// Executables built beside the test bundle (`swift build --build-tests` builds every product into one
/// directory): the four services and the runtime testbed.
public enum BuiltProducts {
    public struct Missing: Error, CustomStringConvertible {
        public let name: String
        public var description: String {
            "\(name) is not built next to the tests: run `swift build --build-tests` first"
        }
    }

    public static func path(_ name: String) throws -> String {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            bundleDirectory,
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
        ].map { $0.appendingPathComponent(name).path }
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Missing(name: name)
        }
        return path
    }
}
