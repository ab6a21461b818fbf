// C++ workload for the valgrind comparison: new/delete, new[]/delete[],
// std::vector growth, std::string, std::map. Deterministic.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Node { std::string name; std::vector<int> values; Node *next = nullptr; };
Node *volatile keep;

int main()
{
    std::map<int, std::string> m;
    std::vector<std::unique_ptr<Node>> nodes;
    uint32_t x = 12345;
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        auto n = std::make_unique<Node>();
        n->name = std::string("node-number-with-a-long-name-") + std::to_string(i);
        for (int k = 0; k < (int)(x % 40); k++) n->values.push_back(k);
        m[(int)(x % 500)] = n->name;
        nodes.push_back(std::move(n));
        if (i % 7 == 0) { int *a = new int[1 + x % 100]; a[0] = i; delete[] a; }
        if (i % 5 == 0) nodes.erase(nodes.begin() + (x % nodes.size()));
    }
    keep = new Node();              // leaked on purpose
    keep->name = std::string(100, 'x');
    return 0;
}
