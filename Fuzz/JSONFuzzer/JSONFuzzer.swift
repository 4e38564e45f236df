import ProtoBridge
import ProtoJSON
import ProtoTestSupport
import RPCCore
import YediProto

#if canImport(Glibc)
    import Glibc
#endif

/// libFuzzer target: the first byte picks a message type (every type of every proto), the rest is JSON
/// text for ProtoJSON's parser and decoder, as the probe reads it from a file or stdin. A message that
/// decodes must encode (compact and pretty), and the encoder's output must parse back to the same text.
let schemas: [MessageSchema] = (RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes).map { $0.schema }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let schema = schemas[Int(data[0]) % schemas.count]
    let text = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    guard let message = try? ProtoJSONDecoder().decode(utf8: text, as: schema) else { return 0 }
    for style in [ProtoJSONEncoder.Style.compact, .pretty] {
        let encoder = ProtoJSONEncoder(style: style)
        let encoded: [UInt8]
        do {
            encoded = try encoder.encodeUTF8(message)
        } catch {
            fatalError("\(schema.fullName): decoded from JSON but does not encode: \(error)")
        }
        let again: DynamicMessage
        do {
            again = try ProtoJSONDecoder().decode(utf8: encoded, as: schema)
        } catch {
            fatalError("\(schema.fullName): the encoder's output does not parse back: \(error)")
        }
        // NaN != NaN: compare the texts when the values differ.
        if again != message, (try? encoder.encodeUTF8(again)) != encoded {
            fatalError("\(schema.fullName): JSON round trip changed the message")
        }
    }
    return 0
}

/// `YEDI_FUZZ_WRITE_SEEDS=<dir>`: writes the seed corpus into `dir` and exits, instead of fuzzing: for
/// every type, its index byte before the JSON of SampleMessages' variants (those under 8 KiB) and `{}`.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    guard let directory = getenv("YEDI_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    precondition(schemas.count <= 256, "the type index no longer fits in one byte")
    for (index, schema) in schemas.enumerated() {
        var forms: [[UInt8]] = [Array("{}".utf8)]
        for sample in SampleMessages.variants(of: schema) {
            if let json = try? ProtoJSONEncoder().encodeUTF8(sample), json.count <= 8192 { forms.append(json) }
        }
        for (number, bytes) in forms.enumerated() {
            let path = "\(directory)/\(schema.fullName)-\(number).json"
            let file = fopen(path, "wb")!
            fwrite([UInt8(index)] + bytes, 1, bytes.count + 1, file)
            fclose(file)
        }
    }
    exit(0)
}
