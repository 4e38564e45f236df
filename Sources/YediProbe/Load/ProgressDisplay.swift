import LoadGenerator

#if canImport(Glibc)
    import Glibc
#endif

/// Shows the progress line on stderr: redrawn in place on a terminal, one line a second elsewhere (a
/// log file or a test reading stderr).
struct ProgressDisplay: Sendable {
    let inPlace = isatty(STDERR_FILENO) == 1

    func show(_ line: ProgressLine) {
        if inPlace {
            Output.errorText("\r\(line.text)\u{1B}[K")
        } else {
            Output.errorLine(line.text)
        }
    }

    /// Clears the redrawn line, so the report starts on a clean one.
    func finish() {
        if inPlace { Output.errorText("\r\u{1B}[K") }
    }
}
