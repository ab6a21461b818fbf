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
