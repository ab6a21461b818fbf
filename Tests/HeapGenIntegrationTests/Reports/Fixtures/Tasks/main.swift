// Built with Sources/HeapGen/HeapGen.swift, module name Fixture: Swift concurrency.
// Each cycle, a task group of 10 child tasks opens a Session in an actor, registers
// a handler that captures it (never removed: abandoned) and closes the session; then
// the cycle is marked. The child tasks run on whichever cooperative-pool thread takes
// them, so one allocation site is reached through more than one executor path.

final class Session {
    let id: Int
    var payload = [UInt8](repeating: 1, count: 200)
    init(id: Int) { self.id = id }
}

actor Registry {
    var sessions: [Session] = []
    var handlers: [() -> Int] = []

    func open(_ id: Int) -> Session {
        let session = Session(id: id)   // ALLOC Session
        sessions.append(session)
        return session
    }

    func observe(_ session: Session) { handlers.append { session.id } }
    func close(_ id: Int) { sessions.removeAll { $0.id == id } }
}

let cycles = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 8 : 8
let registry = Registry()
for cycle in 0..<cycles {
    await withTaskGroup(of: Void.self) { group in
        for i in 0..<10 {
            group.addTask {
                let session = await registry.open(cycle * 100 + i)
                await registry.observe(session)
                await registry.close(session.id)
            }
        }
    }
    HeapGen.mark("cycle \(cycle)")
}
print("tasks: \(cycles) cycles, \(await registry.handlers.count) handlers")
