import Foundation

/// Finds the development PKI that `deploy/dev-pki.sh` makes, so the probe works from any working
/// directory: `$YEDI_PKI` if set (as the services read it), else `deploy/pki` in the working directory or
/// one of its parents, else the one of the repository the probe was built in (`<repo>/.build/<config>/yedi-probe`).
enum DevPKI {
    /// The dev PKI folder, or nil when none of the places has a `ca.pem`.
    static let directory: String? = find(
        environment: ProcessInfo.processInfo.environment,
        workingDirectory: FileManager.default.currentDirectoryPath,
        executable: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    )

    /// `name` in the dev PKI, if the folder was found and the file exists.
    static func file(_ name: String) -> String? {
        guard let directory else { return nil }
        let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    static func find(environment: [String: String], workingDirectory: String, executable: String) -> String? {
        if let configured = environment["YEDI_PKI"], !configured.isEmpty { return configured }
        let starts = [
            URL(fileURLWithPath: workingDirectory), URL(fileURLWithPath: executable).deletingLastPathComponent(),
        ]
        for start in starts {
            var folder = start.standardizedFileURL
            while true {
                let candidate = folder.appendingPathComponent("deploy/pki")
                if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("ca.pem").path) {
                    return candidate.path
                }
                let parent = folder.deletingLastPathComponent()
                if parent.path == folder.path { break }
                folder = parent
            }
        }
        return nil
    }
}
