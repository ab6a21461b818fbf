#if canImport(Testing)
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs the test only when the test binary runs under heapgen; elsewhere Swift
    /// Testing reports it as **skipped**, with the command that would run it.
    ///
    /// ```swift
    /// @Test(.requiresHeapgen) func profileScreenDoesNotLeak() throws {
    ///     try HeapGen.expectNoGrowth(cycles: 10, warmUp: 2) { showAndCloseProfile() }
    /// }
    /// ```
    ///
    /// Swift Testing has no way to skip a test once it runs: without this trait,
    /// ``HeapGen/expectNoGrowth(cycles:warmUp:tolerance:function:fileID:file:line:column:_:)`` and
    /// ``HeapGen/expectDeallocation(_:within:fileID:file:line:column:)`` can only cancel it.
    public static var requiresHeapgen: Self {
        .enabled(if: ControlClient.isAvailable,
                 Comment(rawValue: "needs the program to run under heapgen: \(TestOutcome.heapgenCommand)"))
    }
}
#endif
