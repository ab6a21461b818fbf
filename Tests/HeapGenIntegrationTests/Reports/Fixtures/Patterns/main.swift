// The classic Foundation leak patterns, one type each, on Linux (Swift 5 mode).
// Built with Sources/HeapGen/HeapGen.swift, module name Fixture:
//   ClosureCycleVM   closure retain cycle (self.handler = { self.x })
//   TimerOwner       block-based Timer on the run loop, never invalidated
//   ObserverOwner    NotificationCenter block observer capturing it, never removed
//   WorkItemOwner    DispatchWorkItem in a property, its block capturing self
//   CacheEntry       values of a static dictionary filled in the first cycle (a cache)
//   ReleasedScreen   pushed and popped properly: released every cycle
import Foundation

final class ClosureCycleVM {
    var x = 1
    var handler: (() -> Int)?
    func bind() { handler = { self.x } }
}

final class TimerOwner {
    var ticks = 0
    var timer: Timer?
    func start() {
        timer = Timer.scheduledTimer(withTimeInterval: 3600, repeats: true) { _ in self.ticks += 1 }
    }
}

final class ObserverOwner {
    var seen = 0
    func subscribe() {
        _ = NotificationCenter.default.addObserver(
            forName: Notification.Name("FixtureThemeChanged"), object: nil, queue: nil
        ) { _ in self.seen += 1 }
    }
}

final class WorkItemOwner {
    var runs = 0
    var work: DispatchWorkItem?
    func prepare() { work = DispatchWorkItem { self.runs += 1 } }
}

final class CacheEntry {
    let key: String
    let payload: [UInt8]
    init(key: String) { self.key = key; payload = [UInt8](repeating: 1, count: 256) }
}

enum EntryCache {
    static var entries: [String: CacheEntry] = [:]
    static func entry(_ key: String) -> CacheEntry {
        if let hit = entries[key] { return hit }
        let made = CacheEntry(key: key)
        entries[key] = made
        return made
    }
}

final class ReleasedScreen {
    var title: String
    var items: [Int]
    init(title: String) { self.title = title; items = Array(0..<32) }
}

@inline(never) func pushAndPop(_ cycle: Int) {   // BEGIN pushAndPop
    let screen = ReleasedScreen(title: "screen \(cycle)")

    let vm = ClosureCycleVM()
    vm.bind()

    let timerOwner = TimerOwner()
    timerOwner.start()

    let observer = ObserverOwner()
    observer.subscribe()

    let workOwner = WorkItemOwner()
    workOwner.prepare()

    for i in 0..<8 { _ = EntryCache.entry("key-\(i)") }

    RunLoop.current.run(until: Date(timeIntervalSinceNow: 0.005))
    _ = screen.items.count + (vm.handler?() ?? 0)
}   // END pushAndPop

let cycles = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 9 : 9
HeapGen.cycles(cycles) { pushAndPop(0) }
print("patterns: \(cycles) cycles")
