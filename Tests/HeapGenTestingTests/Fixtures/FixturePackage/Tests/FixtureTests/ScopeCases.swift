// Three expectNoGrowth tests in one class, one leaking: a gate over the whole test binary
// must judge each on its own cycles and name the leaking one.

import HeapGen
import HeapGenTesting
import XCTest

/// Kept alive by a retain cycle through its closure, like LeakyViewModel.
final class ScopeLeakyModel {
    var onUpdate: (() -> Void)?
    init() { onUpdate = { _ = self } }
}

/// Released at the end of every cycle.
final class ScopeCleanModel {
    var values: [Int] = [1, 2, 3]
}

final class ScopeTests: XCTestCase {
    func testScopeCleanFirst() throws {
        try HeapGen.expectNoGrowth(cycles: 8, warmUp: 1) {
            showScreen { ScopeCleanModel() }
        }
    }

    func testScopeLeaks() throws {
        try HeapGen.expectNoGrowth(cycles: 8, warmUp: 2) {
            showScreen { ScopeLeakyModel() }
        }
    }

    func testScopeCleanLast() throws {
        try HeapGen.expectNoGrowth(cycles: 8, warmUp: 1) {
            showScreen { ScopeCleanModel() }
        }
    }
}
