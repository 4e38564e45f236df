import Foundation

extension ServiceHarness {
    /// The repository's app files (`deploy/apps`), as `deploy/start.sh` passes them: the four apps with
    /// their roles, limits and catalogues as deployed.
    public static let repositoryApps = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/apps").path
}
