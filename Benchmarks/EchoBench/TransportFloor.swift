import ArgumentParser
import Foundation
import Histogram
import NIOCore
import NIOPosix
import RPCCore
import RPCTLS

/// The anchors' echo on the transport alone: NIO, RPCTLS's `TLSHandler` and a 4-byte length prefix,
/// shaped like the C anchor (every frame of a read answered, one flush per read), with no RPC layer.
///
/// It exists to show how much of the C echo's throughput this stack can reach at all, so that the RPC
/// layer's cost can be read as the difference. `--task-per-call` adds only the one thing every RPC call
/// pays on top: a `Task.immediate` on the connection's event loop that produces the reply.
///
///     echo-bench floor-server --port 50055 --cert certs/cert.pem --key certs/key.pem [--task-per-call]
///     echo-bench floor-client --port 50055 --ca certs/cert.pem --conns 4 --inflight 64
struct FloorServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "floor-server",
        abstract: "Echo length-prefixed frames over NIO + TLSHandler, without RPC."
    )

    @Option var host = "127.0.0.1"
    @Option var port = 50055
    @Option(help: "Certificate chain (PEM).") var cert = "certs/cert.pem"
    @Option(help: "Private key (PEM).") var key = "certs/key.pem"
    @Option(help: "Event-loop threads.") var threads = 1
    @Flag(help: "Answer each frame from a Task.immediate on the connection's loop, as an RPC handler runs.")
    var taskPerCall = false
    @Flag(help: "No TLS (diagnosis only: not comparable with the anchors, which all use TLS).")
    var plaintext = false
    @OptionGroup var allocations: AllocationOptions

    func run() async throws {
        let window = allocations.window(label: taskPerCall ? "floortask" : "floor")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let context = try TLSContext(configuration: .server(certificateChainFile: cert, privateKeyFile: key))
        let taskPerCall = taskPerCall
        let plaintext = plaintext
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if !plaintext { try channel.pipeline.syncOperations.addHandler(TLSHandler(serverContext: context)) }
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(LengthPrefixedFrameDecoder()),
                        FloorEchoHandler(
                            executor: taskPerCall ? EventLoopExecutor(channel.eventLoop) : nil, window: window),
                    ])
                }
            }
            .bind(host: host, port: port)
            .get()
        try await channel.closeFuture.get()
    }
}

/// The floor's load client: C requests in flight over K connections, each reply answered from the
/// channel handler with the next request (no tasks), latency from send to reply; one JSON line.
struct FloorClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "floor-client",
        abstract: "Load a floor-server (or any 4-byte length-prefixed TLS echo)."
    )

    @Option var host = "127.0.0.1"
    @Option var port = 50055
    @Option(help: "Trust roots (PEM).") var ca = "certs/cert.pem"
    @Option(name: .customLong("server-name")) var serverName = "localhost"
    @Option(help: "Connections (K).") var conns = 4
    @Option(help: "Calls in flight (C).") var inflight = 64
    @Option(help: "Measured seconds.") var duration = 10.0
    @Option(help: "Warm-up seconds.") var warmup = 2.0
    @Option(help: "Payload bytes.") var payload = 64
    @Option(help: "Event-loop threads.") var threads = 1
    @Flag(help: "No TLS (diagnosis only, against floor-server --plaintext).") var plaintext = false

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let context = try TLSContext(configuration: .client(trustRootsFile: ca))
        let plaintext = plaintext
        var request = ByteBuffer()
        request.writeInteger(UInt32(payload))
        request.writeRepeatingByte(0x61, count: payload)
        let start = BenchClient.now()
        let window = FloorWindow(
            warmEnd: start + UInt64(warmup * 1e9),
            end: start + UInt64((warmup + duration) * 1e9)
        )
        let firstRequest = request
        var histograms: [EventLoopFuture<Histogram<UInt64>>] = []
        var channels: [any Channel] = []
        for connection in 0..<conns {
            let share = inflight / conns + (connection < inflight % conns ? 1 : 0)
            let done = group.any().makePromise(of: Histogram<UInt64>.self)
            histograms.append(done.futureResult)
            let serverName = serverName
            let payload = payload
            let channel = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if !plaintext {
                            try channel.pipeline.syncOperations.addHandler(
                                TLSHandler(clientContext: context, serverName: serverName))
                        }
                        try channel.pipeline.syncOperations.addHandlers([
                            ByteToMessageHandler(LengthPrefixedFrameDecoder()),
                            FloorLoadHandler(
                                request: firstRequest,
                                payload: payload,
                                inflight: share,
                                window: window,
                                done: done
                            ),
                        ])
                    }
                }
                .connect(host: host, port: port)
                .get()
            channels.append(channel)
        }
        var merged = BenchClient.newHistogram()
        for histogram in histograms { merged.add(try await histogram.get()) }
        for channel in channels { try? await channel.close() }
        try await group.shutdownGracefully()
        let rps = Double(merged.totalCount) / duration
        print(
            "{\"impl\":\"yedi-transport-floor\",\"rps\":\(Int(rps.rounded())),"
                + "\"p50_us\":\(BenchClient.micros(merged.valueAtPercentile(50))),"
                + "\"p99_us\":\(BenchClient.micros(merged.valueAtPercentile(99))),"
                + "\"p999_us\":\(BenchClient.micros(merged.valueAtPercentile(99.9))),"
                + "\"conns\":\(conns),\"inflight\":\(inflight),\"payload\":\(payload)}"
        )
    }
}

struct FloorWindow: Sendable {
    let warmEnd: UInt64
    let end: UInt64
}

/// A 4-byte big-endian length, then that many bytes; passes the payload up as a slice.
struct LengthPrefixedFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
            buffer.readableBytes >= 4 + Int(length)
        else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(Self.wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }
}

/// Writes every frame back, flushing once per read; optionally from a task per frame.
final class FloorEchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let executor: EventLoopExecutor?
    private let window: AllocationWindow?
    /// Between a read and its read-complete, whose flush sends what the read's calls wrote.
    private var reading = false

    init(executor: EventLoopExecutor?, window: AllocationWindow? = nil) {
        self.executor = executor
        self.window = window
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        window?.callAnswered()
        guard let executor else {
            context.write(
                Self.wrapOutboundOut(Self.reply(to: frame, allocator: context.channel.allocator)), promise: nil)
            return
        }
        reading = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        // Runs on this thread until it suspends (it does not), as RPCCore's call runner starts handlers;
        // a reply made later would resume on the loop (the executor preference) and flush itself.
        Task.immediate(executorPreference: executor) {
            await FloorEchoHandler.respond(to: frame, handler: handler, context: bound)
        }
    }

    private static func respond(
        to frame: ByteBuffer,
        handler: NIOLoopBound<FloorEchoHandler>,
        context: NIOLoopBound<ChannelHandlerContext>
    ) async {
        let reply = await answer(frame)
        let context = context.value
        context.write(NIOAny(Self.reply(to: reply, allocator: context.channel.allocator)), promise: nil)
        if !handler.value.reading { context.flush() }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        context.flush()
    }

    /// What a handler would compute; async so the task is a real one.
    private static func answer(_ frame: ByteBuffer) async -> ByteBuffer { frame }

    private static func reply(to frame: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var out = allocator.buffer(capacity: 4 + frame.readableBytes)
        out.writeInteger(UInt32(frame.readableBytes))
        var frame = frame
        out.writeBuffer(&frame)
        return out
    }
}

/// Keeps `inflight` requests outstanding on one connection until the window ends, then reports.
final class FloorLoadHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: ByteBuffer
    private let payload: Int
    private let inflight: Int
    private let window: FloorWindow
    private let done: EventLoopPromise<Histogram<UInt64>>
    /// Send times of the requests in flight, oldest first (the server answers in order).
    private var sent: CircularBuffer<UInt64>
    private var histogram = BenchClient.newHistogram()

    init(
        request: ByteBuffer, payload: Int, inflight: Int, window: FloorWindow, done: EventLoopPromise<Histogram<UInt64>>
    ) {
        self.request = request
        self.payload = payload
        self.inflight = inflight
        self.window = window
        self.done = done
        self.sent = CircularBuffer(initialCapacity: max(inflight, 1))
    }

    func channelActive(context: ChannelHandlerContext) {
        for _ in 0..<inflight { send(context: context, at: BenchClient.now()) }
        context.flush()
        if inflight == 0 { done.succeed(histogram) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let reply = Self.unwrapInboundIn(data)
        precondition(reply.readableBytes == payload, "bad echo")
        let now = BenchClient.now()
        let started = sent.removeFirst()
        if now >= window.warmEnd && now < window.end { histogram.record(now - started) }
        if now < window.end {
            send(context: context, at: now)
        } else if sent.isEmpty {
            done.succeed(histogram)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }

    private func send(context: ChannelHandlerContext, at time: UInt64) {
        sent.append(time)
        context.write(Self.wrapOutboundOut(request), promise: nil)
    }
}
