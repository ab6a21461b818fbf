import HeapGen
import HeapGenTesting
import Testing

@Suite(.serialized) struct SwiftTestingCases {
    @Test(.requiresHeapgen) func leakyCycleFailsInSwiftTesting() throws {
        try HeapGen.expectNoGrowth(cycles: 6, warmUp: 1) {
            showScreen { LeakyViewModel() }
        }
    }

    @Test(.requiresHeapgen) func releasedObjectPassesInSwiftTesting() throws {
        var model: CleanViewModel? = CleanViewModel()
        try HeapGen.expectDeallocation(model.take()!, within: .seconds(2))
    }

    /// Without the trait, all the library can do outside heapgen is cancel the test.
    @Test func withoutTheTraitTheTestIsCancelled() throws {
        try HeapGen.expectNoGrowth(cycles: 3, warmUp: 0) {
            showScreen { CleanViewModel() }
        }
    }
}
