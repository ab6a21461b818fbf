// Findings whose shown stacks look alike: keep<int> and keep<double> are two
// functions at one line, called from one line (their short names may read the
// same, their stacks differ); deep() reaches one allocation through five frames
// from two lines of main (stacks that differ only below the frames shown).
#include <cstdlib>
#include "heapgen.h"

void *kept[256];
int nkept;

template <class T> __attribute__((noipa)) void keep(T) { kept[nkept++] = std::malloc(sizeof(T) * 8); }

__attribute__((noipa)) void leaf() { kept[nkept++] = std::malloc(24); }
__attribute__((noipa)) void d4() { leaf(); }
__attribute__((noipa)) void d3() { d4(); }
__attribute__((noipa)) void d2() { d3(); }
__attribute__((noipa)) void d1() { d2(); }

int main() {
    for (int i = 0; i < 6; i++) {
        keep(1); keep(2.0);  // TWO KEEPS
        d1();  // DEEP A
        d1();  // DEEP B
        HEAPGEN_MARK("cycle");
    }
    return 0;
}
