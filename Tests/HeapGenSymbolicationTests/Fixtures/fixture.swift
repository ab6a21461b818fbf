// Symbolication fixture. Lines tagged MARK are looked up by the tests.
public struct ProfileViewModel {
    public var name: String
    public var score: Int
    @inline(never)
    public init(name: String) {
        self.name = name                                  // MARK: ProfileViewModel.init body
        self.score = name.utf8.count * 7
    }
}

public final class Inventory {
    public var items: [String] = []
    public var handlers: [(Int) -> Int] = []

    public init() {}

    @inline(never)
    public func addItem(named name: String) -> Int {
        items.append(name)                                // MARK: Inventory.addItem body
        return items.count
    }

    @inline(never)
    public func installHandler(offset: Int) {
        handlers.append({ value in
            value &* 3 &+ offset &+ self.items.count      // MARK: handler closure body
        })
    }
}

@inline(never)
func runAll(_ inventory: Inventory, _ seed: Int) -> Int {
    var total = seed
    for h in inventory.handlers { total = h(total) }
    return total
}

let inventory = Inventory()
let count = inventory.addItem(named: CommandLine.arguments.first ?? "x")
inventory.installHandler(offset: count)
let model = ProfileViewModel(name: "user\(count)")
print(runAll(inventory, model.score))
