// The recorder's services from above the collector, as the CLI passes them in.

import HeapGenRecord

/// Control answers that need analysis, symbolication and reports, and the symbol store.
package final class RecordServiceProvider: RecordServices {
    package let controlResponder: any ControlResponder = InTestAnswers()

    package init() {}

    package func storeSymbols(in traces: [TraceSymbolInputs]) -> SymbolStoreOutcome {
        TraceSymbolStore.store(in: traces)
    }
}
