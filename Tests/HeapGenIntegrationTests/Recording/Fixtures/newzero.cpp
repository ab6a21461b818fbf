// newzero.cpp: `new T[0]` for a T with a destructor is an 8-byte block that
// holds the element count, 0; the program holds block + 8, the block's end,
// and may delete[] it. Kept in a global: nothing leaked (LeakSanitizer agrees;
// valgrind calls it lost).
struct Node {
    ~Node();
    int value;
};
Node::~Node() { value = 0; }

Node *volatile kept;

int main() {
    kept = new Node[0];
    return 0;
}
