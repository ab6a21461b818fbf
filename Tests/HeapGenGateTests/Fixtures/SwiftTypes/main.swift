// Two Swift types abandoned every cycle, for type: suppressions. Built with
// Sources/HeapGen/HeapGen.swift, module name GateFixture:
//   GateFixture.Session   one kept per cycle by openSession
//   GateFixture.Token     one kept per cycle by issueToken

final class Session {
    let id: Int
    let owner: Int
    init(id: Int) { self.id = id; owner = id * 2 }
}

final class Token {
    let value: Int
    init(_ value: Int) { self.value = value }
}

var sessions: [Session] = []
var tokens: [Token] = []
sessions.reserveCapacity(64)
tokens.reserveCapacity(64)

@inline(never) func openSession(_ i: Int) { sessions.append(Session(id: i)) }
@inline(never) func issueToken(_ i: Int) { tokens.append(Token(i)) }

var cycle = 0
HeapGen.cycles(8) {
    cycle += 1
    openSession(cycle)
    issueToken(cycle)
}
print("swift-types: \(sessions.count) sessions, \(tokens.count) tokens")
