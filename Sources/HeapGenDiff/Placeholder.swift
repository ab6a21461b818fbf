// HeapGenDiff (being written).
