/// An event a service streams live: it belongs to one stream key (the recipient, the promise, the
/// member) and has a position that only grows, in commit order, across all keys.
///
/// Positions are what make a stream resumable: a client keeps the last one it saw and subscribes again
/// after it. They come from the service's own table (an `INTEGER PRIMARY KEY AUTOINCREMENT`), so they mean
/// the same after a restart; those of one key may have gaps (other keys' events are in between).
public protocol PositionedEvent: Sendable {
    associatedtype Key: Hashable & Sendable
    var position: Int64 { get }
    /// Whose streams receive it.
    var streamKey: Key { get }
}
