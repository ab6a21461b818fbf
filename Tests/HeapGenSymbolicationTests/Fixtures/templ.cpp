// Symbolication fixture (C++, -O2 -g): a namespaced class template method.
#include <cstdio>
#include <vector>

namespace ns {
template <typename T> struct Foo {
    std::vector<T> items;
    __attribute__((noinline)) T bar(T extra) {
        T total = extra;                 // MARK: Foo::bar start
        for (auto &i : items) total += i * 2;
        return total;
    }
};
} // namespace ns

int main(int argc, char **) {
    ns::Foo<int> f;
    f.items = {argc, 2, 3};
    std::printf("%d\n", f.bar(argc)); // MARK: main call
    return 0;
}
