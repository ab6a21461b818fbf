import HeapGen
import HeapGenTesting
import XCTest

final class ExpectNoGrowthTests: XCTestCase {
    func testLeakyCycleFails() throws {
        try HeapGen.expectNoGrowth(cycles: 6, warmUp: 1) {
            showScreen { LeakyViewModel() }
        }
    }

    func testCleanCyclePasses() throws {
        try HeapGen.expectNoGrowth(cycles: 6, warmUp: 1) {
            showScreen { CleanViewModel() }
        }
    }
}

final class ExpectDeallocationTests: XCTestCase {
    func testRetainedObjectFails() throws {
        var model: LeakyViewModel? = LeakyViewModel()
        model!.onUpdate?()
        try HeapGen.expectDeallocation(model.take()!, within: .milliseconds(300))
    }

    func testReleasedObjectPasses() throws {
        var model: CleanViewModel? = CleanViewModel()
        model!.onUpdate?()
        try HeapGen.expectDeallocation(model.take()!, within: .seconds(2))
    }
}

final class RetentionPathTests: XCTestCase {
    func testHeldBySingletonClosureFails() throws {
        var model: ProfileViewModel? = ProfileViewModel()
        model!.start()
        try HeapGen.expectDeallocation(model.take()!, within: .milliseconds(300))
    }

    func testParentChildCycleFails() throws {
        var parent: Parent? = Parent()
        parent!.child = Child()
        parent!.child!.parent = parent
        try HeapGen.expectDeallocation(parent.take()!, within: .milliseconds(300))
    }
}
