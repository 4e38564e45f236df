/// A parsed JSON value that remembers where it started, so that schema errors found later (a wrong type,
/// an unknown field) can still point at the line and column of the input.
struct JSONValue: Sendable {
    enum Content: Sendable {
        case null
        case bool(Bool)
        /// The literal text of the number, checked against RFC 8259's grammar. Kept as text because
        /// converting to `Double` here would lose int64 digits; the field's type decides the conversion.
        case number(String)
        case string(String)
        case array([JSONValue])
        /// Members in input order; keys are unique (the parser rejects duplicates).
        case object([Member])
    }

    struct Member: Sendable {
        let key: String
        /// Byte offset of the key's opening quote.
        let keyOffset: Int
        let value: JSONValue
    }

    let content: Content
    /// Byte offset of the value's first character in the input.
    let offset: Int

    /// How an error message names this value: `a string "x"`, `the number 1.5`, `an object`.
    var summary: String {
        switch content {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let text): "the number \(text.count > 40 ? String(text.prefix(40)) + "…" : text)"
        case .string(let text): "a string \(quoted(text))"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue.Content: Equatable {
    /// Structural equality that ignores positions: two parses of differently spaced text are equal.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case (.array(let a), .array(let b)): a.map(\.content) == b.map(\.content)
        case (.object(let a), .object(let b)):
            a.count == b.count
                && zip(a, b).allSatisfy {
                    $0.key.unicodeScalars.elementsEqual($1.key.unicodeScalars) && $0.value.content == $1.value.content
                }
        default: false
        }
    }
}
