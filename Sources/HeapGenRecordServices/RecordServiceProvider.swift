// The recorder's services from above the collector, as the CLI passes them in.

import HeapGenRecord
import HeapGenSymbolication
import HeapGenTrace

/// Control answers that need analysis, symbolication and reports, and the symbol store.
package final class RecordServiceProvider: RecordServices {
    package let controlResponder: any ControlResponder = InTestAnswers()

    /// The symbolizer the symbol store uses, warmed up while the program runs.
    private lazy var readAhead = ModuleReadAhead(symbolizer: Symbolizer())

    package init() {}

    package func moduleMapped(_ module: ModuleRecord) {
        readAhead.moduleMapped(module)
    }

    package func storeSymbols(in traces: [TraceSymbolInputs]) -> SymbolStoreOutcome {
        readAhead.finish()
        return TraceSymbolStore.store(in: traces, symbolizer: readAhead.symbolizer)
    }
}
