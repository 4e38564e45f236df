/// An enum generated from proto/. Unknown numbers (from a newer peer) are kept in `.unrecognized`.
public protocol ProtoEnum: Sendable, Hashable {
    static var schema: EnumSchema { get }
    /// Every named case, in declaration order.
    static var knownCases: [Self] { get }
    init(rawValue: Int32)
    var rawValue: Int32 { get }
}
