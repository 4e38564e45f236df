import Foundation

/// This process's resident memory in bytes (`/proc/self/statm`), for tests that bound what a hostile
/// peer can make a server hold.
func residentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    let pages = Int(statm.split(separator: " ")[1]) ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
