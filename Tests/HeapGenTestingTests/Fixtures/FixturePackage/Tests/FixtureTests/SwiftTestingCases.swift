import HeapGen
import HeapGenTesting
import Testing

@Suite(.serialized) struct SwiftTestingCases {
    @Test func leakyCycleFailsInSwiftTesting() throws {
        try HeapGen.expectNoGrowth(cycles: 6, warmUp: 1) {
            showScreen { LeakyViewModel() }
        }
    }

    @Test func releasedObjectPassesInSwiftTesting() throws {
        var model: CleanViewModel? = CleanViewModel()
        try HeapGen.expectDeallocation(model.take()!, within: .seconds(2))
    }
}
