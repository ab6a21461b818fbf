// Two view models: one abandoned through a closure that captures it strongly,
// one that captures itself weakly.

final class LeakyViewModel {
    var onUpdate: (() -> Void)?
    var values: [Int] = []

    init() {
        onUpdate = { self.values.append(1) }      // self -> closure -> self
    }
}

final class CleanViewModel {
    var onUpdate: (() -> Void)?
    var values: [Int] = []

    init() {
        onUpdate = { [weak self] in self?.values.append(1) }
    }
}

/// A push/pop cycle of a screen that owns a view model.
func showScreen<Model: AnyObject>(_ make: () -> Model) {
    let model = make()
    _ = model
}

/// A singleton that keeps every subscriber's closure and never lets go: a view model that
/// subscribes with a closure capturing itself strongly stays alive through `shared`.
final class EventBus {
    static let shared = EventBus()
    var subscribers: [() -> Void] = []

    func subscribe(_ handler: @escaping () -> Void) { subscribers.append(handler) }
}

final class ProfileViewModel {
    var title = "profile"

    func start() {
        EventBus.shared.subscribe { self.title += "!" }   // shared -> array -> closure -> self
    }
}

/// Two objects that hold each other: dropped together, freed never.
final class Parent {
    var child: Child?
}

final class Child {
    var parent: Parent?
}
