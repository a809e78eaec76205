import Foundation
import Subscriptions
import TestSupport
import Testing

@testable import Application

/// Which status reads a streaming replica may answer. The expectation is what a customer would see: a read never
/// shows an account as it was before a change that was already heard — committed on the primary — however far
/// behind the replica is. Positions stand for WAL byte positions.
@Suite("Replica positions")
struct ReplicaPositionsTests {
    let alice = AccountID("alice")!
    let bob = AccountID("bob")!
    let carol = AccountID("carol")!

    /// The tracker's round: a primary position read after the round began covers every change heard before.
    static func round(_ positions: inout ReplicaPositions, primary: UInt64) {
        let round = positions.beginRound()
        positions.primaryPosition(primary, covering: round)
    }

    @Test("nothing is answered before the first primary position and a replica position at or past it")
    func startsClosed() {
        var positions = ReplicaPositions()
        #expect(!positions.covers(alice))
        positions.replicaReplayed(500)
        #expect(!positions.covers(alice), "no primary position read yet: what the replica lacks is not known")
        Self.round(&positions, primary: 600)
        #expect(!positions.covers(alice), "the replica has not replayed what was committed before the process began")
        positions.replicaReplayed(600)
        #expect(positions.covers(alice) && positions.covers(bob))
    }

    @Test("a changed account waits for its position and for the replica to pass it; the others do not")
    func changedAccount() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(100)
        positions.changed(alice)
        #expect(positions.hasPending)
        #expect(!positions.covers(alice), "pending: its commit's position is not known yet")
        positions.replicaReplayed(10_000)
        #expect(!positions.covers(alice), "still pending however far the replica says it is: no position was read after the change")
        #expect(positions.covers(bob))
        Self.round(&positions, primary: 20_000)
        #expect(!positions.hasPending)
        #expect(!positions.covers(alice))
        positions.replicaReplayed(19_999)
        #expect(!positions.covers(alice))
        positions.replicaReplayed(20_000)
        #expect(positions.covers(alice))
    }

    @Test("a change heard after a round began is not covered by that round's position")
    func changeDuringRound() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        let round = positions.beginRound()
        positions.changed(alice)
        positions.primaryPosition(200, covering: round)
        positions.replicaReplayed(1_000)
        #expect(!positions.covers(alice), "the position may have been read before alice's commit")
        Self.round(&positions, primary: 1_500)
        #expect(!positions.covers(alice))
        positions.replicaReplayed(1_500)
        #expect(positions.covers(alice))
    }

    @Test("a change of unknown accounts closes every account until the next position, which all then require")
    func everything() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(150)
        positions.changedEverything()
        #expect(!positions.covers(alice) && !positions.covers(bob))
        Self.round(&positions, primary: 300)
        #expect(!positions.covers(bob))
        positions.replicaReplayed(300)
        #expect(positions.covers(alice) && positions.covers(bob))
    }

    @Test("a replica that cannot be read answers nothing until it can")
    func unavailable() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(100)
        positions.replicaUnavailable()
        #expect(!positions.covers(alice))
        positions.replicaReplayed(100)
        #expect(positions.covers(alice))
    }

    @Test("what an account requires never falls below its last change once the replica has passed it (another standby may not have)")
    func requirementStays() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(100)
        positions.changed(alice)
        Self.round(&positions, primary: 5_000)
        positions.replicaReplayed(6_000)
        #expect(positions.requirement(of: alice) == 5_000, "a read on a standby at 3,000 must not pass")
        #expect(positions.requirement(of: bob) == 5_000, "the floor rose with it: coarser, never below a heard change")
    }

    @Test("a replica whose replay goes back (restarted from an earlier point) answers nothing until it passes a new position")
    func backwards() {
        var positions = ReplicaPositions()
        Self.round(&positions, primary: 100)
        positions.changed(alice)
        Self.round(&positions, primary: 200)
        positions.replicaReplayed(200)
        #expect(positions.covers(alice))
        positions.replicaReplayed(150)
        #expect(!positions.covers(alice) && !positions.covers(bob), "what was replayed before may be missing now")
        Self.round(&positions, primary: 300)
        positions.replicaReplayed(299)
        #expect(!positions.covers(bob))
        positions.replicaReplayed(300)
        #expect(positions.covers(alice) && positions.covers(bob))
    }

    @Test("the cache sends no read to the replica while a job of this process writes, nor after it until a new position")
    func jobWrites() {
        let cache = AccountStatusCache(replica: true)
        func round(primary: UInt64, replayed: UInt64) {
            _ = cache.replicaPositions { positions in
                Self.round(&positions, primary: primary)
                positions.replicaReplayed(replayed)
            }
        }
        round(primary: 100, replayed: 100)
        #expect(cache.replicaRequirement(of: alice) == nil, "not listening: other processes' changes are not heard")
        cache.setListening(true)
        round(primary: 150, replayed: 150)
        #expect(cache.replicaRequirement(of: alice) == 150)
        cache.beginWrite()
        round(primary: 200, replayed: 200)
        #expect(cache.replicaRequirement(of: alice) == nil, "the job may commit past 200 before it ends")
        cache.endWrite()
        #expect(cache.replicaRequirement(of: alice) == nil, "its commit's position is not known yet")
        round(primary: 300, replayed: 300)
        #expect(cache.replicaRequirement(of: alice) == 300)
        cache.invalidate(bob)
        #expect(cache.replicaRequirement(of: bob) == nil && cache.replicaRequirement(of: alice) == 300)
    }

    @Test("a change is not held one by one past the capacity while no position can be read: every account waits")
    func pendingBounded() {
        var positions = ReplicaPositions(capacity: 3)
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(100)
        for index in 0..<10 { positions.changed(AccountID("account-\(index)")!) }
        #expect(!positions.covers(carol), "more changes than the capacity: every account waits for the next position")
        Self.round(&positions, primary: 200)
        positions.replicaReplayed(200)
        #expect(positions.covers(carol) && positions.covers(AccountID("account-9")!))
    }

    @Test("past its capacity every account requires the latest position: coarser, never stale")
    func capacity() {
        var positions = ReplicaPositions(capacity: 2)
        Self.round(&positions, primary: 100)
        positions.replicaReplayed(100)
        for account in [alice, bob, carol] { positions.changed(account) }
        Self.round(&positions, primary: 400)
        positions.replicaReplayed(399)
        #expect(!positions.covers(AccountID("dave")!), "the floor moved up to 400")
        positions.replicaReplayed(400)
        #expect(positions.covers(alice) && positions.covers(AccountID("dave")!))
    }

    /// Random histories against a model of the primary's WAL: every commit gets the next position, the tracker's
    /// rounds read the position reached, the replica replays up to a random point not past it, and now and then
    /// starts again from an earlier one. Whenever the replica
    /// is said to cover an account, it has replayed that account's last heard commit. Once it has replayed
    /// everything and a round has run, it covers every account.
    @Test("random histories: a covered account's last heard commit is always replayed", arguments: 0..<8)
    func randomHistories(seed: UInt64) {
        var random = SplitMix64(state: seed + 1)
        let accounts = (0..<12).map { AccountID("account-\($0)")! }
        var positions = ReplicaPositions(capacity: 6)
        var written: UInt64 = 0
        var replayed: UInt64 = 0
        var lastCommit: [AccountID: UInt64] = [:]
        var everythingCommit: UInt64 = 0
        var openRound: (round: ReplicaPositions.Round, position: UInt64?)?
        for _ in 0..<5_000 {
            switch random.next() % 7 {
            case 0, 1:
                written += 1 + random.next() % 50
                let account = accounts[Int(random.next() % UInt64(accounts.count))]
                lastCommit[account] = written
                positions.changed(account)
            case 2:
                written += 1 + random.next() % 50
                everythingCommit = written
                positions.changedEverything()
            case 3:
                // A round begins, or its position is read (after changes possibly heard meanwhile), or it ends.
                if let round = openRound {
                    if let position = round.position {
                        positions.primaryPosition(position, covering: round.round)
                        openRound = nil
                    } else {
                        openRound = (round.round, written)
                    }
                } else {
                    openRound = (positions.beginRound(), nil)
                }
            case 4, 5:
                replayed = min(written, replayed + random.next() % 120)
                positions.replicaReplayed(replayed)
            default:
                if random.next() % 10 == 0 { positions.replicaUnavailable() }
                if random.next() % 10 == 0 {
                    // Restarted from an earlier restart point: it shows less than before.
                    replayed /= 2
                    positions.replicaReplayed(replayed)
                }
            }
            for account in accounts {
                guard let required = positions.requirement(of: account) else { continue }
                let needed = max(lastCommit[account] ?? 0, everythingCommit)
                #expect(needed <= replayed, "seed \(seed): a stale read would be allowed")
                // What a read checks on its own connection, which may reach another standby: never less than needed.
                #expect(required >= needed, "seed \(seed): a read on a standby further behind would be allowed")
            }
        }
        if let round = openRound { positions.primaryPosition(round.position ?? written, covering: round.round) }
        Self.round(&positions, primary: written)
        positions.replicaReplayed(written)
        #expect(accounts.allSatisfy { positions.covers($0) }, "seed \(seed): a replica that has replayed everything answers")
    }
}

extension ReplicaPositions {
    /// Whether the replica, as last read, has replayed every change of `account` heard so far.
    func covers(_ account: AccountID) -> Bool { requirement(of: account) != nil }
}
