import NIOCore
import ProtoBridge

/// A received `yedi.rpc.Frame` (proto/rpc.proto), read in one pass over the bytes that carried it.
///
/// The payload stays a slice of the received buffer, so the request or response inside it is decoded
/// once, straight from those bytes, by whoever knows its type. Strings are checked for UTF-8 (and NUL,
/// which protobuf-c's C strings cannot carry) once, here. Most frames are written with the generated
/// `YediRPC.Frame` (a call's REQUEST and its reply are written by hand: `RequestFrame`, `ReplyFrame`);
/// reading them is hand-written because every call pays for it, and the generic path
/// (validate, unpack with protobuf-c, copy into Swift values) made the payload take three copies.
/// `InboundFrameTests` checks it against that path on valid and mutated frames.
///
/// Metadata is read straight into the `Metadata` the call's context carries (keys lowercased, as
/// `Metadata` keeps them), and what the metadata limits and the memory budget need of it (entries,
/// bytes) is counted on the way, so no one walks the entries again.
struct InboundFrame {
    var callID: UInt64 = 0
    var kind: YediRPC.FrameKind = .unspecified
    var method = ""
    var metadata = Metadata()
    /// Metadata entries read (and checked) but not kept, past the reader's `maxMetadataEntries`: a
    /// frame of a million empty entries costs a count, not a million objects.
    var metadataEntriesNotKept = 0
    /// The metadata's size as the limits count it, kept entries and others alike.
    var metadataSize = MetadataSize()
    var timeoutMicros: UInt64 = 0
    var payload: ByteBuffer
    var status: YediRPC.Status?
    var windowBytes: UInt32 = 0
    var lastCallID: UInt64 = 0
    var maxConcurrentCalls: UInt32 = 0
    var maxFrameBytes: UInt32 = 0
    var rememberedMetadataBytes: UInt32 = 0

    /// Reads the frame in `body` (a frame's bytes, without the length prefix). Unknown fields are
    /// skipped, as protobuf requires; anything protobuf-c would refuse is refused the same way. Metadata
    /// entries past `maxMetadataEntries` are checked and counted but not kept (the server refuses such
    /// a call by the count).
    ///
    /// `previousMethod`, `previousMetadata`: what the connection's previous request carried; a frame
    /// repeating the method, or an entry at the same place, shares those strings instead of allocating
    /// its own.
    static func read(
        _ body: ByteBuffer, maxMetadataEntries: Int = .max, previousMethod: String = "",
        previousMetadata: Metadata = Metadata()
    ) throws(WireError) -> InboundFrame {
        let start = body.readerIndex
        // The frame is made and returned inside the closure: captured from outside, it was copied out of
        // it whole (a reference count for each of its strings and buffers) on every frame.
        let result: Result<InboundFrame, ProtoDecodingError> = body.withUnsafeReadableBytes { bytes in
            var frame = InboundFrame(payload: ByteBuffer())
            do throws(WireReader.Failure) {
                var reader = WireReader(bytes: bytes)
                try frame.readFields(
                    &reader, payloadFrom: body, at: start, maxMetadataEntries: maxMetadataEntries,
                    previousMethod: previousMethod, previousMetadata: previousMetadata)
                return .success(frame)
            } catch {
                return .failure(error.decodingError(in: "yedi.rpc.Frame"))
            }
        }
        switch consume result {
        case .success(let frame): return frame
        case .failure(let error): throw .malformedFrame(error)
        }
    }

    private mutating func readFields(
        _ reader: inout WireReader, payloadFrom body: ByteBuffer, at start: Int, maxMetadataEntries: Int,
        previousMethod: String, previousMetadata: Metadata
    ) throws(WireReader.Failure) {
        var statusHasMessage = false
        while !reader.isAtEnd {
            let (number, wireType) = try reader.tag()
            do throws(WireReader.Failure) {
                switch number {
                case 1: callID = try reader.uint64(wireType)
                case 2: kind = YediRPC.FrameKind(rawValue: Int32(truncatingIfNeeded: try reader.uint64(wireType)))
                case 3: method = try reader.string(wireType, reusing: previousMethod)
                case 4:
                    var entry = WireReader(bytes: try reader.bytes(wireType))
                    let index = metadataSize.entries
                    let read = try Self.readMetadataEntry(
                        &entry, like: index < previousMetadata.entries.count ? previousMetadata.entries[index] : nil)
                    metadataSize.add(keyBytes: read.keyBytes, valueBytes: read.value.utf8.count)
                    if metadata.count < maxMetadataEntries {
                        metadata.appendLowercased(Metadata.Entry(key: read.key, value: read.value))
                    } else {
                        metadataEntriesNotKept += 1
                    }
                case 5: timeoutMicros = try reader.uint64(wireType)
                case 6:
                    let range = try reader.bytesRange(wireType)
                    payload = body.getSlice(at: start + range.lowerBound, length: range.count)!
                case 7:
                    var nested = WireReader(bytes: try reader.bytes(wireType))
                    var (read, hasMessage) = try Self.readStatus(&nested)
                    // A message field that occurs again is merged into the earlier one, as protobuf-c 1.4
                    // does: the code is the last one's, and a message the last one leaves out keeps its
                    // earlier value (an empty message that is present does not).
                    if !hasMessage, statusHasMessage, let earlier = status { read.message = earlier.message }
                    statusHasMessage = statusHasMessage || hasMessage
                    status = read
                case 8: windowBytes = UInt32(truncatingIfNeeded: try reader.uint64(wireType))
                case 9: lastCallID = try reader.uint64(wireType)
                case 10: maxConcurrentCalls = UInt32(truncatingIfNeeded: try reader.uint64(wireType))
                case 11: maxFrameBytes = UInt32(truncatingIfNeeded: try reader.uint64(wireType))
                case 12: rememberedMetadataBytes = UInt32(truncatingIfNeeded: try reader.uint64(wireType))
                default: try reader.skip(wireType)
                }
            } catch {
                throw error.within(Self.fieldNames[number] ?? "#\(number)")
            }
        }
    }

    private static let fieldNames: [UInt64: String] = [
        1: "call_id", 2: "kind", 3: "method", 4: "metadata", 5: "timeout_micros", 6: "payload", 7: "status",
        8: "window_bytes", 9: "last_call_id", 10: "max_concurrent_calls", 11: "max_frame_bytes",
        12: "remembered_metadata_bytes",
    ]

    /// An entry with its key lowercased, and the key's bytes as sent (what the limits count). A key or
    /// value with the same bytes as `previous`'s (the previous request's entry at the same place) is
    /// that string, and so is an entry marked `same_as_previous` (which must carry no key or value of
    /// its own, and must have a previous entry to repeat).
    private static func readMetadataEntry(_ reader: inout WireReader, like previous: Metadata.Entry?)
        throws(WireReader.Failure) -> (key: String, keyBytes: Int, value: String)
    {
        var key = ""
        var value = ""
        var sameAsPrevious = false
        while !reader.isAtEnd {
            let (number, wireType) = try reader.tag()
            do throws(WireReader.Failure) {
                switch number {
                case 1: key = try reader.string(wireType, reusing: previous?.key ?? "")
                case 2: value = try reader.string(wireType, reusing: previous?.value ?? "")
                case 3: sameAsPrevious = try reader.uint64(wireType) != 0
                default: try reader.skip(wireType)
                }
            } catch {
                throw error.within(Self.entryFieldNames[number] ?? "#\(number)")
            }
        }
        if sameAsPrevious {
            guard key.isEmpty, value.isEmpty else {
                throw WireReader.Failure(
                    reason: .invalidValue("an entry repeating the previous one has a key or value")
                )
                .within("same_as_previous")
            }
            guard let previous else {
                throw WireReader.Failure(
                    reason: .invalidValue("no entry at this place in the previous request to repeat")
                ).within("same_as_previous")
            }
            // Counted as the stored entry: keys are sent lowercase (a client's `Metadata` lowercases
            // them), so these are the bytes its client counted.
            return (previous.key, previous.key.utf8.count, previous.value)
        }
        let keyBytes = key.utf8.count
        // Keys are sent lowercase; lowercasing costs a new string only for one that is not.
        if key.utf8.contains(where: { $0 >= UInt8(ascii: "A") && ($0 <= UInt8(ascii: "Z") || $0 >= 0x80) }) {
            key = key.lowercased()
        }
        return (key, keyBytes, value)
    }

    private static let entryFieldNames: [UInt64: String] = [1: "key", 2: "value", 3: "same_as_previous"]

    /// A status, and whether its message field was present (which protobuf-c's merge goes by).
    private static func readStatus(_ reader: inout WireReader) throws(WireReader.Failure)
        -> (YediRPC.Status, hasMessage: Bool)
    {
        var status = YediRPC.Status()
        var hasMessage = false
        while !reader.isAtEnd {
            let (number, wireType) = try reader.tag()
            do throws(WireReader.Failure) {
                switch number {
                case 1: status.code = UInt32(truncatingIfNeeded: try reader.uint64(wireType))
                case 2:
                    status.message = try reader.string(wireType)
                    hasMessage = true
                default: try reader.skip(wireType)
                }
            } catch {
                throw error.within(number == 1 ? "code" : number == 2 ? "message" : "#\(number)")
            }
        }
        return (status, hasMessage)
    }
}
