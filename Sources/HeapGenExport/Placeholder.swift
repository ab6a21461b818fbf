// HeapGenExport (being written).
