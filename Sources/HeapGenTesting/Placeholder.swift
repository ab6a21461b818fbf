// HeapGenTesting (being written).
