// A function whose demangled C++ name is well over 1,000 characters: a template
// instance over nested types with long names. It keeps one block per cycle.
#include <cstdlib>
#include "heapgen.h"

template <class A, class B> struct AVeryLongTemplateNameForTestingPurposesOnly {};
struct SomeRatherLongStructureNameNumberOne {};
struct SomeRatherLongStructureNameNumberTwo {};
using L1 = AVeryLongTemplateNameForTestingPurposesOnly<SomeRatherLongStructureNameNumberOne, SomeRatherLongStructureNameNumberTwo>;
using L2 = AVeryLongTemplateNameForTestingPurposesOnly<L1, L1>;
using L3 = AVeryLongTemplateNameForTestingPurposesOnly<L2, L2>;
using L4 = AVeryLongTemplateNameForTestingPurposesOnly<L3, L3>;

void *kept[16];

template <class T> __attribute__((noipa)) void keep_block(int i, T) { kept[i] = std::malloc(32); }

int main() {
    for (int i = 0; i < 6; i++) {
        keep_block(i, L4());
        HEAPGEN_MARK("cycle");
    }
    return 0;
}
