import Logging
import RPCCore

extension ServerContext {
    /// The one log line of an applied `PurgeUser`, alike in every service so that an operator can follow a
    /// deletion across them: the user as their keyed tag (logs outlive accounts, so never the id), whether
    /// this delivery was the first (a redelivery changes nothing), and how much of each kind went.
    public func logPurge(of userID: String, firstDelivery: Bool, removed: KeyValuePairs<String, Int> = [:]) {
        var metadata: Logger.Metadata = ["user": "\(userTag(userID))", "first-delivery": "\(firstDelivery)"]
        for (kind, count) in removed { metadata["removed.\(kind)"] = "\(count)" }
        logger.info("purge user", metadata: metadata)
    }
}
