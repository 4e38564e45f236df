/// A `Range` request header, as far as an image server needs: one range of bytes (`bytes=0-499`,
/// `bytes=500-`, `bytes=-500`). Several ranges, other units and malformed values are ignored (the whole
/// image is sent, as RFC 9110 allows); a range that starts past the end cannot be satisfied (416).
enum ByteRange: Equatable {
    case whole
    case part(Range<Int>)
    case unsatisfiable

    init(header: String?, length: Int) {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else {
            self = .whole
            return
        }
        let spec = header.dropFirst("bytes=".count)
        let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2 else {
            self = .whole
            return
        }
        let first = Self.number(ends[0])
        let last = Self.number(ends[1])
        switch (ends[0].isEmpty, ends[1].isEmpty, first, last) {
        case (true, false, _, let suffix?):  // the last N bytes
            self = suffix == 0 ? .unsatisfiable : .part(max(0, length - suffix)..<length)
        case (false, true, let start?, _):  // from start to the end
            self = start < length ? .part(start..<length) : .unsatisfiable
        case (false, false, let start?, let end?) where start <= end:
            self = start < length ? .part(start..<min(end + 1, length)) : .unsatisfiable
        default:
            self = .whole
        }
    }

    /// Digits only (no sign, no spaces), at most 18 of them.
    private static func number(_ text: Substring) -> Int? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }
}
