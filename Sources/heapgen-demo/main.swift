// heapgen-demo: a "screen" pushed and popped ten times, with the three
// kinds of memory heapgen tells apart:
//   - ProfileViewModel is abandoned through a closure retain cycle,
//   - ThemeSubscriber is abandoned by a NotificationCenter observer that
//     is never removed,
//   - ImageCache fills once and then plateaus: a cache, not a leak.
import Foundation
import HeapGen

/// Bounded and reused: filled on the first push, hit afterwards.
final class ImageCache {
    static let shared = ImageCache()
    private var images: [String: [UInt8]] = [:]

    func image(named name: String) -> [UInt8] {
        if let image = images[name] { return image }
        let image = [UInt8](repeating: 0x7f, count: 48 * 1024)
        images[name] = image
        return image
    }
}

final class ProfileViewModel {
    var name: String
    var history: [String] = []
    var onChange: (() -> Void)?

    init(name: String) { self.name = name }

    func bind() {
        // The closure keeps `self` alive and `self` keeps the closure:
        // a retain cycle that outlives the screen.
        onChange = { self.history.append(self.name) }
    }
}

final class ThemeSubscriber {
    var theme = "light"
    func apply(_ note: Notification) { theme = note.name.rawValue }
}

final class ProfileScreen {
    let viewModel: ProfileViewModel
    let avatar: [UInt8]

    init(user: String) {
        viewModel = ProfileViewModel(name: user)
        viewModel.bind()
        avatar = ImageCache.shared.image(named: "avatar-\(user)")
        let subscriber = ThemeSubscriber()
        // Never removed: NotificationCenter keeps the block, the block keeps the subscriber.
        _ = NotificationCenter.default.addObserver(
            forName: Notification.Name("ThemeChanged"), object: nil, queue: nil
        ) { note in subscriber.apply(note) }
    }

    func show() {
        viewModel.onChange?()
    }
}

let cycles = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10 : 10
HeapGen.cycles(cycles) {
    let screen = ProfileScreen(user: "ada")   // push
    screen.show()
}                                            // pop: the screen itself goes away
print("heapgen-demo: pushed and popped the profile screen \(cycles) times")
