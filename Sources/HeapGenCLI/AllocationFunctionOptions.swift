// `--alloc-fn`, declared once for the commands that name allocation sites
// (`report`, `check` and `run` through ReportOptions, and `diff`).

import ArgumentParser
import HeapGenSymbolication

/// The program's allocation wrappers: a site inside one is named after its caller.
struct AllocationFunctionOptions: ParsableArguments {
    @Option(name: .customLong("alloc-fn"), help: ArgumentHelp(
        "An allocation wrapper of the program (repeatable; NAME* for a prefix): sites are named after its caller, as massif's --alloc-fn.",
        valueName: "name"))
    var allocFn: [String] = []

    func validate() throws {
        if allocFn.contains(where: \.isEmpty) { throw ValidationError("--alloc-fn needs a function name.") }
    }

    /// Makes the wrappers apply to every site named from now on: the setting is
    /// process-wide (``OwnCode``), and the collector names sites too.
    func apply() {
        OwnCode.setAllocationFunctions(allocFn)
    }
}
