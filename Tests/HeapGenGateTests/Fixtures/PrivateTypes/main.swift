// A private nested type abandoned every cycle: its runtime name carries the
// address of an anonymous context, `PrivateFixture.SessionRegistry.(unknown
// context at $…).Entry`, which moves with ASLR. Built with
// Sources/HeapGen/HeapGen.swift, module name PrivateFixture.

final class SessionRegistry {
    private final class Entry {
        let id: Int
        init(id: Int) { self.id = id }
    }

    private var entries: [Entry] = []

    init() { entries.reserveCapacity(64) }

    @inline(never) func open(_ id: Int) { entries.append(Entry(id: id)) }

    var count: Int { entries.count }
}

let registry = SessionRegistry()
var cycle = 0
HeapGen.cycles(8) {
    cycle += 1
    registry.open(cycle)
}
print("private-types: \(registry.count) entries")
