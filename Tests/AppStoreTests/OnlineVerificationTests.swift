import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import IntegrationSupport

@Suite("Online verification through a real OCSP responder over HTTP")
struct OnlineVerificationTests {
    final class ResponderSlot: Sendable {
        let responder = Mutex<TestOCSPResponder?>(nil)
    }

    @Test("OCSP good: accepted; responder unreachable: 503 so Apple retries, nothing stored")
    func onlineIntake() async throws {
        let slot = ResponderSlot()
        let router = Router()
        router.post("/ocsp") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let responder = slot.responder.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let answer = try responder.respond(to: Array(buffer: body))
            return Response(
                status: .ok, headers: [.contentType: "application/ocsp-response"], body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
        try await Application(router: router).test(.live) { ocspServer in
            let uri = "http://127.0.0.1:\(ocspServer.port!)/ocsp"
            try await StorekeeperHarness.run(
                worker: false, environment: ["STOREKEEPER_ONLINE_CHECKS": "true"], chainOptions: .init(ocspResponderURI: uri)
            ) { harness in
                slot.responder.withLock { $0 = TestOCSPResponder(chain: harness.chain) }
                let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
                let body = try harness.signer.requestBody(for: event)
                try await harness.withHTTP { client in
                    let response = try await client.postNotification(body)
                    #expect(response.status == .ok)
                    #expect((try? response.answer(IntakeAnswer.self))?.status == "accepted")
                }
            }
        }
        // A chain whose responder does not answer at all.
        try await StorekeeperHarness.run(
            worker: false, environment: ["STOREKEEPER_ONLINE_CHECKS": "true"],
            chainOptions: .init(ocspResponderURI: "http://127.0.0.1:1/ocsp")
        ) { harness in
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            let body = try harness.signer.requestBody(for: event)
            try await harness.withHTTP { client in
                let response = try await client.postNotification(body)
                #expect(response.status == .serviceUnavailable)
                #expect((try? response.answer(ErrorAnswer.self))?.error == "verification_unavailable")
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications") == 0)
        }
    }
}
