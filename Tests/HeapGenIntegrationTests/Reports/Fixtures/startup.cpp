// A C++ program: libstdc++'s static initialiser allocates its emergency
// exception-handling pool before main; main keeps 3 blocks of 100 bytes
// (through operator new[], so libstdc++ is linked).
#include <cstdio>

char *kept[3];

int main() {
    for (int i = 0; i < 3; i++) kept[i] = new char[100];
    std::printf("startup: done\n");
    return 0;
}
