// Fixture for "why is it alive" in Swift (Swift 5 language mode):
//   bus N   each cycle a SettingsViewModel subscribes to EventBus.shared with a
//           closure capturing it, and is never unsubscribed: held through the
//           singleton's `subscribers` array of closures.
//   pair N  each cycle a Parent and a Child point at each other (`child`,
//           `parent`) and are dropped: a retain cycle nothing else reaches.

final class EventBus {
    static let shared = EventBus()
    var subscribers: [() -> Void] = []
    func subscribe(_ handler: @escaping () -> Void) { subscribers.append(handler) }
}

final class SettingsViewModel {
    var title = "settings"
    var counter = 0
    func start() {
        EventBus.shared.subscribe { self.counter += 1 }
    }
}

final class Parent {
    var name = "parent"
    var child: Child?
}

final class Child {
    var parent: Parent?
}

@inline(never) func openSettings() {
    let model = SettingsViewModel()
    model.start()
}

@inline(never) func makePair() {
    let p = Parent()
    let c = Child()
    p.child = c
    c.parent = p
}

let mode = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "bus"
let cycles = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 8 : 8
HeapGen.cycles(cycles) {
    if mode == "pair" { makePair() } else { openSettings() }
}
print("retention \(mode): \(cycles) cycles")
