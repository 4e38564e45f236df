/// Where invitation codes come from: 8 digits, each uniform over 0–9 (the original app drew 0–8 on the
/// phone, so 9 never appeared). Injected so tests can draw from a seeded generator.
protocol InvitationCodeSource: Sendable {
    func next() -> String
}

/// The production source: the system's secure random generator.
struct SecureInvitationCodes: InvitationCodeSource {
    func next() -> String {
        var generator = SystemRandomNumberGenerator()
        return InvitationCode.draw(using: &generator)
    }
}

enum InvitationCode {
    /// Eight digits drawn with `generator` (`random(in:)` is unbiased).
    static func draw(using generator: inout some RandomNumberGenerator) -> String {
        String((0..<8).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
    }
}
