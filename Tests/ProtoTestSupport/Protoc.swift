import Foundation

/// Google's protobuf implementation (Debian `protobuf-compiler`), as an independent reference.
public enum Protoc {
    /// The repository's proto/ directory.
    public static let protoDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("proto")

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `protoc --encode=TYPE FILE < text`
    public static func encode(_ text: String, as type: String, file: String) throws -> [UInt8] {
        try run(["--encode=\(type)", file], input: Array(text.utf8))
    }

    /// `protoc --decode=TYPE FILE < bytes`
    public static func decode(_ bytes: [UInt8], as type: String, file: String) throws -> String {
        String(decoding: try run(["--decode=\(type)", file], input: bytes), as: UTF8.self)
    }

    /// How protoc's text format writes a string: UTF-8 above ASCII as octal escapes.
    public static func textEscaped(_ string: String) -> String {
        var result = ""
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): result += "\\\""
            case UInt8(ascii: "\\"): result += "\\\\"
            case UInt8(ascii: "\n"): result += "\\n"
            case 0x20..<0x7F: result.append(Character(Unicode.Scalar(byte)))
            default: result += "\\" + String(byte, radix: 8).leftPadded(to: 3)
            }
        }
        return result
    }

    private static func run(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/protoc")
        process.arguments = ["-I", protoDirectory.path] + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "protoc \(arguments.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))")
        }
        return Array(output)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
