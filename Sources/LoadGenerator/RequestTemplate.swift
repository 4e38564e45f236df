/// A JSON request whose string values may hold placeholders, expanded afresh for every call:
///
/// - `{{seq}}`: the call's sequence number in the run, 0, 1, 2, … (unique within a run).
/// - `{{random:a,b,c}}`: one of the listed values, picked at random for each call (spaces around
///   the commas are dropped).
/// - `{{uuid}}`: a random version-4 UUID, lowercase.
///
/// Placeholders live inside JSON strings only, so the template is still valid JSON; proto3's JSON
/// mapping takes integers as strings too, so `{"count": "{{seq}}"}` fills a number field. The expanded
/// text is inserted as it is written in the template (already JSON-escaped).
public struct RequestTemplate: Sendable, Equatable {
    enum Piece: Sendable, Equatable {
        case text(String)
        case sequence
        case random([String])
        case uuid
    }

    let pieces: [Piece]

    /// The placeholders, as one line for error messages.
    public static let syntax = "{{seq}}, {{uuid}} or {{random:a,b,c}}"

    /// Parses `json`; an unknown, unclosed or misplaced placeholder is an error, not literal text.
    public init(_ json: String) throws(RequestTemplateError) {
        var pieces: [Piece] = []
        var literal = ""
        var inString = false
        var escaped = false
        var index = json.startIndex
        while index < json.endIndex {
            let character = json[index]
            if inString, !escaped, json[index...].hasPrefix("{{") {
                let nameStart = json.index(index, offsetBy: 2)
                guard let close = json[nameStart...].range(of: "}}"),
                    !json[nameStart..<close.lowerBound].contains("\"")
                else {
                    throw RequestTemplateError(
                        "a placeholder is not closed with }} inside its string: use \(Self.syntax)")
                }
                if !literal.isEmpty { pieces.append(.text(literal)) }
                literal = ""
                pieces.append(try Self.piece(named: String(json[nameStart..<close.lowerBound])))
                index = close.upperBound
                continue
            }
            if !inString, json[index...].hasPrefix("{{") {
                throw RequestTemplateError(
                    "placeholders go inside JSON strings (\"{{seq}}\"; integer fields take strings too)")
            }
            if inString {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inString = false
                }
            } else if character == "\"" {
                inString = true
            }
            literal.append(character)
            index = json.index(after: index)
        }
        if !literal.isEmpty { pieces.append(.text(literal)) }
        self.pieces = pieces
    }

    private static func piece(named rawName: String) throws(RequestTemplateError) -> Piece {
        let name = trimmed(rawName)
        switch name {
        case "seq": return .sequence
        case "uuid": return .uuid
        default:
            let prefix = "random:"
            guard name.hasPrefix(prefix) else {
                throw RequestTemplateError("unknown placeholder {{\(name)}}: use \(syntax)")
            }
            let choices = name.dropFirst(prefix.count).split(separator: ",", omittingEmptySubsequences: false)
                .map { trimmed(String($0)) }
            guard !choices.contains(where: \.isEmpty) else {
                throw RequestTemplateError("{{\(name)}}: every value of a random list must be non-empty")
            }
            return .random(choices)
        }
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }

    /// True when every call sends the same request, so it can be encoded once.
    public var isConstant: Bool {
        pieces.allSatisfy { if case .text = $0 { true } else { false } }
    }

    /// The request of the call numbered `sequence`.
    public func render(sequence: UInt64, using generator: inout some RandomNumberGenerator) -> String {
        var result = ""
        for piece in pieces {
            switch piece {
            case .text(let text): result += text
            case .sequence: result += String(sequence)
            case .random(let choices): result += choices.randomElement(using: &generator)!
            case .uuid: result += Self.uuid(using: &generator)
            }
        }
        return result
    }

    /// Renderings in which every choice of every random list appears at least once, to check before a
    /// run that each of them makes a valid request.
    public func samples() -> [String] {
        let rounds = pieces.map { if case .random(let choices) = $0 { choices.count } else { 1 } }.max() ?? 1
        return (0..<max(1, rounds)).map { round in
            pieces.map { piece in
                switch piece {
                case .text(let text): text
                case .sequence: String(round)
                case .random(let choices): choices[round % choices.count]
                case .uuid: "00000000-0000-4000-8000-000000000000"
                }
            }.joined()
        }
    }

    /// RFC 9562 version 4: random bits with the version and variant fields set.
    static func uuid(using generator: inout some RandomNumberGenerator) -> String {
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        let low = (generator.next() as UInt64) & ~(0xC << 60) | (0x8 << 60)
        let hex = hex(high, digits: 16) + hex(low, digits: 16)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: digits - text.count) + text
    }
}

/// A template the probe cannot use; the message says what to write instead.
public struct RequestTemplateError: Error, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
