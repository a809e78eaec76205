import NIOCore
import NIOPosix
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("Database connections spread over the event loops")
struct SpreadingEventLoopGroupTests {
    @Test("asked from inside one of its loops, NIO's group answers that loop; the spreading group takes turns")
    func takesTurnsFromInsideALoop() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let inside = loops.next()
        // The connection pool asks for a loop from the task it runs on, which in `work` is on one of NIO's loops.
        let plain = try await inside.submit { (0..<4).map { _ in ObjectIdentifier(loops.any()) } }.get()
        #expect(Set(plain) == [ObjectIdentifier(inside)])
        let spreading = SpreadingEventLoopGroup(loops)
        let spread = try await inside.submit { (0..<4).map { _ in ObjectIdentifier(spreading.any()) } }.get()
        #expect(Set(spread).count == 2)
        #expect(Set(spreading.makeIterator().map { ObjectIdentifier($0) }).count == 2)
        try await loops.shutdownGracefully()
    }

    @Test("it does not shut down the loops it borrows")
    func refusesToShutDown() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        await #expect(throws: EventLoopError.self) { try await SpreadingEventLoopGroup(loops).shutdownGracefully() }
        #expect(try await loops.next().submit { 42 }.get() == 42)
        try await loops.shutdownGracefully()
    }
}
