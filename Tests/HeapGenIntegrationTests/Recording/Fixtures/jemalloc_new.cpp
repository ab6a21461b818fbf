// jemalloc_new: a C++ program linked with -ljemalloc, whose operator
// new/delete (libjemalloc defines them) bind ahead of libstdc++'s: `new`
// never calls malloc, so heapgen cannot record it, and must say so on its
// own stderr. One plain malloc shows what heapgen does record.
#include <cstdio>
#include <cstdlib>

int main()
{
    for (int i = 0; i < 10; i++) {
        int *volatile p = new int[100];
        p[0] = i;
        delete[] p;
    }
    void *volatile q = std::malloc(10);
    std::free(q);
    std::printf("done\n");
    return 0;
}
