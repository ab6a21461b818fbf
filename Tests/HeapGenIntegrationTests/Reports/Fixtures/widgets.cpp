// widgets.cpp: C++ allocations through operator new; one Widget and one
// heap-backed std::string leaked per cycle, a std::map cache filled in cycle 1.
#include <map>
#include <string>
#include "heapgen.h"

struct Widget {
    long id;
    char payload[120];
};

Widget *widgets[100];          // not static: -O2 would drop the allocations
std::string *names[100];
static std::map<int, std::string> cache;

namespace ui {
__attribute__((noipa)) void make_widget(int k) { widgets[k] = new Widget{k, {}}; }
__attribute__((noipa)) void make_name(int k) { names[k] = new std::string(100, char('a' + k)); }
__attribute__((noipa)) void fill_cache() {
    for (int i = 0; i < 4; i++) if (!cache.count(i)) cache[i] = std::string(64, 'c');
}
}

__attribute__((noipa)) void end_cycle(int k) { HEAPGEN_MARK(k == 1 ? "warm-up 1" : "cycle"); }

int main() {
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= 7; k++) {
        ui::make_widget(k);
        ui::make_name(k);
        ui::fill_cache();
        end_cycle(k);
    }
    return 0;
}
