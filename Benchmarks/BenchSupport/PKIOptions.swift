import ArgumentParser
import Foundation

/// `--pki` and `--dev-pki-script`: the certificates a bench runs its services with, a throwaway dev PKI
/// unless one is given.
public struct PKIOptions: ParsableArguments {
    @Option(help: "A dev PKI folder (deploy/dev-pki.sh output); default: a throwaway one made with --dev-pki-script.")
    public var pki: String?

    @Option(help: "deploy/dev-pki.sh, to make the throwaway PKI (run from the repository root).")
    public var devPKIScript = "deploy/dev-pki.sh"

    public init() {}

    /// `--pki`, or a new dev PKI in `work/pki`.
    public func folder(in work: URL) throws -> String {
        if let pki { return pki }
        let directory = work.appendingPathComponent("pki").path
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = [devPKIScript, directory]
        script.standardOutput = FileHandle.nullDevice
        try script.run()
        script.waitUntilExit()
        guard script.terminationStatus == 0 else {
            throw ValidationError("\(devPKIScript) failed (run from the repository root, or pass --pki)")
        }
        return directory
    }
}
