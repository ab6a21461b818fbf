// Swift fixture (module name "Fixture"): 1,000 Node objects and 250 Leaf
// objects, kept alive in globals until exit.
import Glibc

final class Node {
    var next: Node?
    var value: Int
    init(value: Int, next: Node?) { self.value = value; self.next = next }
}

final class Leaf {
    var payload: (Int, Int, Int, Int) = (1, 2, 3, 4)
}

var head: Node? = nil
for i in 0..<1000 { head = Node(value: i, next: head) }
var leaves: [Leaf] = []
leaves.reserveCapacity(250)
for _ in 0..<250 { leaves.append(Leaf()) }
var total = 0
var cursor = head
while let n = cursor { total += n.value; cursor = n.next }
if total != 499_500 || leaves.count != 250 { exit(1) }
