import ArgumentParser

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How replies (and `list`) are printed.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument {
    /// proto3's canonical JSON mapping.
    case json
    /// protobuf text format (`list`: a table for people).
    case text
}

/// Unbuffered writes to stdout and stderr: each stream reply must reach a pipe reader as soon as it is
/// printed, not when a buffer fills, and error lines must not wait behind them.
enum Output {
    /// Writes `text` and a newline to stdout.
    static func line(_ text: String) {
        writeAll(text + "\n", to: STDOUT_FILENO)
    }

    /// Writes `text` and a newline to stderr.
    static func errorLine(_ text: String) {
        writeAll(text + "\n", to: STDERR_FILENO)
    }

    /// Writes `text` to stderr as it is (a progress line redrawn with `\r`).
    static func errorText(_ text: String) {
        writeAll(text, to: STDERR_FILENO)
    }

    private static func writeAll(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno == EINTR {
                    continue
                } else if errno == EPIPE {
                    brokenPipe()
                } else {
                    return
                }
            }
        }
    }

    /// The reader went away (`yedi-probe call … | head -3`): end the way Unix filters do. NIO ignores
    /// SIGPIPE process-wide for its sockets, so the default action is restored before raising it.
    private static func brokenPipe() -> Never {
        signal(SIGPIPE, SIG_DFL)
        raise(SIGPIPE)
        exit(128 + SIGPIPE)
    }
}

/// Ends the process with `status`; commands cannot call `exit` directly, ArgumentParser's
/// `exit(withError:)` shadows it.
func terminate(_ status: Int32) -> Never {
    exit(status)
}
