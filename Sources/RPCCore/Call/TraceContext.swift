/// A W3C Trace Context (`traceparent: 00-<trace-id>-<parent-id>-<flags>`), carried in metadata so one
/// trace id follows a request from service to service.
public struct TraceContext: Sendable, Hashable, CustomStringConvertible {
    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// This span: 16 lowercase hex digits, not all zero.
    public let spanID: String
    /// Bit 0: sampled.
    public let flags: UInt8

    public init?(traceID: String, spanID: String, flags: UInt8) {
        guard TraceContext.isHex(traceID, length: 32), TraceContext.isHex(spanID, length: 16) else { return nil }
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
    }

    /// Parses a `traceparent` header value; nil for anything malformed (the header is then ignored).
    public init?(traceparent: String) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        // Version 00 has exactly four parts; later versions may add more; ff is forbidden.
        guard parts.count >= 4, let version = UInt8(parts[0], radix: 16), parts[0].count == 2,
            parts[0] == parts[0].lowercased(), version != 0xFF, version != 0 || parts.count == 4,
            parts[3].count == 2, let flags = UInt8(parts[3], radix: 16)
        else { return nil }
        self.init(traceID: String(parts[1]), spanID: String(parts[2]), flags: flags)
    }

    /// A child span in the same trace.
    public func child(spanID: String) -> TraceContext? {
        TraceContext(traceID: traceID, spanID: spanID, flags: flags)
    }

    /// The header value with this span as the parent.
    public var traceparent: String {
        let hexFlags = String(flags, radix: 16)
        return "00-\(traceID)-\(spanID)-\(hexFlags.count == 1 ? "0" + hexFlags : hexFlags)"
    }

    public var description: String { traceparent }

    private static func isHex(_ text: String, length: Int) -> Bool {
        text.utf8.count == length
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            && text.utf8.contains { $0 != 0x30 }
    }
}
