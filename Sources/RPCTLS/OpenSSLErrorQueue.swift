internal import COpenSSL

/// OpenSSL's error queue, which is per *thread*: every connection on an event loop shares it.
///
/// So we clear it before each SSL call (stale entries from another connection must not be blamed on
/// this one) and drain it right after a failure, on the same thread, before anything else can run.
enum OpenSSLErrorQueue {
    /// One drained entry.
    struct Entry: Sendable, Hashable {
        /// The packed error code, for matching (`ERR_GET_REASON`).
        var code: UInt
        /// The reason string alone, e.g. "certificate verify failed".
        var reason: String
        /// The full line, e.g. "error:0A000086:SSL routines::certificate verify failed", plus any
        /// detail OpenSSL attached (such as the file name `fopen` failed on).
        var line: String
    }

    /// Peeks first: the queue is almost always empty, and peeking is much cheaper than clearing all
    /// of its slots on every SSL_read/SSL_write.
    static func clear() {
        if ERR_peek_error() != 0 {
            ERR_clear_error()
        }
    }

    /// Removes and returns every queued error, oldest first.
    static func drain() -> [Entry] {
        var entries: [Entry] = []
        while true {
            var data: UnsafePointer<CChar>? = nil
            var flags: CInt = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            guard code != 0 else { break }
            entries.append(Entry(code: code, reason: reasonString(code), line: lineString(code, data, flags)))
        }
        return entries
    }

    private static func reasonString(_ code: UInt) -> String {
        guard let reason = ERR_reason_error_string(code) else {
            return "OpenSSL error \(code)"
        }
        return String(cString: reason)
    }

    private static func lineString(_ code: UInt, _ data: UnsafePointer<CChar>?, _ flags: CInt) -> String {
        var line = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer -> String in
            ERR_error_string_n(code, buffer.baseAddress, buffer.count)
            return String(cString: buffer.baseAddress!)
        }
        if let data, flags & ERR_TXT_STRING != 0, data.pointee != 0 {
            line += " (\(String(cString: data)))"
        }
        return line
    }
}
