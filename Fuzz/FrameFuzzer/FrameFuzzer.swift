import Logging
import NIOCore
import NIOEmbedded
import ProtoBridge
import RPCTLS
import YediProto

@testable import RPCCore

#if canImport(Glibc)
    import Glibc
#endif

/// libFuzzer target: bytes a client sends after the TLS handshake, into the real `FrameDecoder` and
/// `ServerConnectionHandler` on an `EmbeddedChannel` (no TLS), so that length prefixes, envelopes, call
/// ids, kinds, windows, deadlines and metadata are all mutated. The echo service is routed (unary and
/// server-streaming), so a well-formed REQUEST runs a handler task on the channel's loop.
///
/// The first byte sets how the rest is cut into reads (1…255 bytes each; 0: one read), so frames split
/// across reads are covered too. Every input gets a fresh channel that is closed and drained at the end.
///
/// Before that, the rest is read as one frame's body by the hand-written `InboundFrame` reader and by
/// the generated decoder (protobuf-c): they must accept the same bytes and read the same fields; and
/// read after a previous request, whose strings the reader shares and whose metadata entries a frame may
/// repeat (`same_as_previous`), it must read what the generated decoder reads, those entries resolved.
let router: RPCRouter = {
    var router = RPCRouter()
    router.register(
        YediEcho.Echo.Method.echo,
        unary: { request, _ in
            YediEcho.EchoResponse(payload: request.payload, text: request.text, sequence: 1)
        })
    router.register(
        YediEcho.Echo.Method.expand,
        serverStreaming: { request, writer, _ in
            for sequence in 0..<min(request.count, 4) {
                let payload = [UInt8](repeating: 7, count: Int(max(0, min(request.payloadSize, 512))))
                try await writer.write(YediEcho.EchoResponse(payload: payload, text: request.text, sequence: sequence))
            }
        })
    router.registerPlaceholder(for: YediHealth.Health.descriptor)
    return router
}()

// Built once, not per input: what does not depend on the channel (the logger, the peer's address).
let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
let peerAddress = try! SocketAddress(ipAddress: "127.0.0.1", port: 443)
let limits = WireLimits(maxFrameBytes: 1 << 16, maxConcurrentCalls: 4, maxMetadataBytes: 1 << 10)
let handshake = TLSHandshakeInfo(
    protocolVersion: .tls13,
    cipherSuite: "TLS_AES_128_GCM_SHA256",
    applicationProtocol: nil,
    peerIdentity: nil
)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let chunk = data[0] == 0 ? max(size - 1, 1) : Int(data[0])
    let bytes = UnsafeBufferPointer(start: data + 1, count: size - 1)
    checkReadersAgree(ByteBuffer(bytes: bytes))
    checkSharingChangesNothing(ByteBuffer(bytes: bytes))

    let channel = EmbeddedChannel()
    let configuration = ServerConnectionHandler.Configuration(
        limits: limits,
        idleTimeout: .seconds(30),
        defaultStreamWindowBytes: 1024,
        router: router,
        interceptors: [],
        executor: EventLoopExecutor(channel.embeddedEventLoop),
        replyBuffers: ReplyBufferPool(eventLoop: channel.embeddedEventLoop),
        logger: logger
    )
    let registry = ConnectionRegistry()
    try! channel.pipeline.syncOperations.addHandlers(
        ByteToMessageHandler(FrameDecoder(maxFrameBytes: limits.maxFrameBytes)),
        ServerConnectionHandler(configuration: configuration, registry: registry)
    )
    channel.connect(to: peerAddress, promise: nil)
    channel.pipeline.fireUserInboundEventTriggered(TLSEvent.handshakeCompleted(handshake))

    var offset = 0
    while offset < bytes.count, channel.isActive {
        let end = min(offset + chunk, bytes.count)
        channel.pipeline.fireChannelRead(ByteBuffer(bytes: bytes[offset..<end]))
        channel.pipeline.fireChannelReadComplete()
        channel.embeddedEventLoop.run()
        offset = end
        while (try? channel.readOutbound(as: ByteBuffer.self)) != nil {}
    }
    // Let deadlines and the idle timer fire, then close; nothing may outlive the input.
    channel.embeddedEventLoop.advanceTime(by: .seconds(60))
    _ = try? channel.finish()
    channel.embeddedEventLoop.run()
    return 0
}

/// Traps (a crash libFuzzer reports with the input) when the two frame readers disagree. Read fresh,
/// an entry marked `same_as_previous` has nothing to repeat, so the hand-written reader refuses it.
func checkReadersAgree(_ body: ByteBuffer) {
    let handWritten = (try? InboundFrame.read(body)).map(fields)
    let expected = expected(body, after: [])
    precondition(
        handWritten == expected,
        "InboundFrame read \(String(describing: handWritten)), expected \(String(describing: expected))")
}

/// Traps when a frame read after a previous request (whose method and metadata strings it may share,
/// and whose entries it may repeat) reads otherwise than the generated decoder says: after itself, and
/// before and after itself with one byte changed.
func checkSharingChangesNothing(_ body: ByteBuffer) {
    var changed = body
    if body.readableBytes > 0 {
        let index = body.readerIndex + body.readableBytes / 2
        changed.setInteger(body.getInteger(at: index, as: UInt8.self)! ^ 0x01, at: index)
    }
    for (previous, next) in [(body, body), (changed, body), (body, changed)] {
        var reader = InboundFrameReader()
        var remembered: [YediRPC.MetadataEntry] = []
        if let first = try? reader.read(previous), first.kind == .request,
            first.metadataSize.bytes <= reader.rememberedMetadataBytes
        {
            remembered = first.metadata.wire
        }
        let shared = (try? reader.read(next)).map(fields)
        let expected = expected(next, after: remembered)
        precondition(
            shared == expected,
            "after a previous request \(String(describing: shared)), expected \(String(describing: expected))")
    }
}

/// What the hand-written reader must read of `body` when the connection's previous request left
/// `remembered`: the generated decoder's fields (keys lowercased, as `Metadata` keeps them), each
/// `same_as_previous` entry being the remembered one at its place; nil (refused) where the generated
/// decoder refuses, or such an entry has a key or value, or nothing at its place.
func expected(_ body: ByteBuffer, after remembered: [YediRPC.MetadataEntry]) -> YediRPC.Frame? {
    guard var frame = try? YediRPC.Frame(buffer: body) else { return nil }
    for (index, entry) in frame.metadata.enumerated() {
        if entry.sameAsPrevious {
            guard entry.key.isEmpty, entry.value.isEmpty, index < remembered.count else { return nil }
            frame.metadata[index] = remembered[index]
        } else {
            frame.metadata[index] = .init(key: entry.key.lowercased(), value: entry.value)
        }
    }
    return frame
}

/// A frame's fields as the generated type holds them, to compare.
func fields(_ frame: InboundFrame) -> YediRPC.Frame {
    YediRPC.Frame(
        callID: frame.callID, kind: frame.kind, method: frame.method, metadata: frame.metadata.wire,
        timeoutMicros: frame.timeoutMicros, payload: Array(frame.payload.readableBytesView), status: frame.status,
        windowBytes: frame.windowBytes, lastCallID: frame.lastCallID, maxConcurrentCalls: frame.maxConcurrentCalls,
        maxFrameBytes: frame.maxFrameBytes, rememberedMetadataBytes: frame.rememberedMetadataBytes)
}

/// `YEDI_FUZZ_WRITE_SEEDS=<dir>`: writes the seed corpus into `dir` and exits, instead of fuzzing:
/// conversations a real client has (unary and streaming echo calls, window updates, cancels, pings,
/// health checks, metadata and deadlines), each in one read and cut into 7-byte reads.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    guard let directory = getenv("YEDI_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    func framed(_ frames: [YediRPC.Frame]) -> [UInt8] {
        var buffer = ByteBuffer()
        for frame in frames {
            let body = try! frame.serializedBytes()
            buffer.writeInteger(UInt32(body.count))
            buffer.writeBytes(body)
        }
        return Array(buffer.readableBytesView)
    }
    let echo = try! YediEcho.EchoRequest(payload: [1, 2, 3, 0xFF], text: "예디 ✂️").serializedBytes()
    let expand = try! YediEcho.ExpandRequest(count: 3, payloadSize: 100, text: "more").serializedBytes()
    let metadata = [
        YediRPC.MetadataEntry(key: "authorization", value: "Bearer x.y.z"),
        YediRPC.MetadataEntry(key: "x-trace-id", value: "0af7651916cd43dd8448eb211c80319c"),
    ]
    let echoPath = YediEcho.Echo.Method.echo.descriptor.path
    let expandPath = YediEcho.Echo.Method.expand.descriptor.path
    let conversations: [String: [YediRPC.Frame]] = [
        "unary": [YediRPC.Frame(callID: 1, kind: .request, method: echoPath, payload: echo)],
        "unary-metadata-deadline": [
            YediRPC.Frame(
                callID: 3, kind: .request, method: echoPath, metadata: metadata, timeoutMicros: 1_000_000,
                payload: echo)
        ],
        "streaming-window": [
            YediRPC.Frame(callID: 5, kind: .request, method: expandPath, payload: expand, windowBytes: 150),
            YediRPC.Frame(callID: 5, kind: .windowUpdate, windowBytes: 4096),
        ],
        "streaming-cancel": [
            YediRPC.Frame(callID: 7, kind: .request, method: expandPath, payload: expand, windowBytes: 10),
            YediRPC.Frame(callID: 7, kind: .cancel),
        ],
        "ping-pong": [YediRPC.Frame(kind: .ping, payload: [1, 2, 3, 4, 5, 6, 7, 8]), YediRPC.Frame(kind: .pong)],
        "pipelined": [
            YediRPC.Frame(callID: 1, kind: .request, method: echoPath, payload: echo),
            YediRPC.Frame(callID: 3, kind: .request, method: expandPath, payload: expand),
            YediRPC.Frame(callID: 5, kind: .request, method: "/yedi.health.Health/Check"),
            YediRPC.Frame(callID: 7, kind: .request, method: "/no.such.Service/Method"),
            YediRPC.Frame(callID: 9, kind: .request, method: echoPath, payload: echo),
            YediRPC.Frame(callID: 11, kind: .request, method: echoPath, payload: echo),
        ],
        "repeated-metadata": [
            YediRPC.Frame(callID: 1, kind: .request, method: echoPath, metadata: metadata, payload: echo),
            YediRPC.Frame(
                callID: 3, kind: .request, method: echoPath,
                metadata: [.init(sameAsPrevious: true), .init(key: "x-trace-id", value: "another")], payload: echo),
            YediRPC.Frame(
                callID: 5, kind: .request, method: echoPath,
                metadata: [.init(sameAsPrevious: true), .init(sameAsPrevious: true), .init(sameAsPrevious: true)],
                payload: echo),
        ],
        "client-sends-server-kind": [YediRPC.Frame(callID: 1, kind: .end, status: YediRPC.Status(code: 2))],
    ]
    for (name, frames) in conversations {
        for (prefix, cut) in [(UInt8(0), "whole"), (UInt8(7), "cut7")] {
            let bytes = [prefix] + framed(frames)
            let file = fopen("\(directory)/\(name)-\(cut)", "wb")!
            fwrite(bytes, 1, bytes.count, file)
            fclose(file)
        }
    }
    exit(0)
}
