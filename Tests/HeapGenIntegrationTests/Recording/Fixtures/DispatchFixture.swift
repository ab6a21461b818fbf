// Swift fixture (module "Fixture"): Job objects made on libdispatch worker
// threads (concurrentPerform and async on a concurrent queue) and through a
// Foundation call, so their stacks cross Dispatch's and Foundation's frames.
import Dispatch
import Foundation

final class Job {
    var id: Int
    init(_ id: Int) { self.id = id }
}

let lock = NSLock()
var kept: [Job] = []

@inline(never) func makeJob(_ id: Int) -> Job { Job(id) }

DispatchQueue.concurrentPerform(iterations: 200) { i in
    let job = makeJob(i)
    lock.lock(); kept.append(job); lock.unlock()
}
let group = DispatchGroup()
let queue = DispatchQueue(label: "fixture.workers", attributes: .concurrent)
for i in 0..<100 {
    queue.async(group: group) {
        let job = makeJob(1000 + i)
        lock.lock(); kept.append(job); lock.unlock()
    }
}
group.wait()
// Through Foundation: a sort whose comparator allocates.
let sorted = kept.sorted { a, b in makeJob(0).id + a.id < b.id }
exit(kept.count == 300 && sorted.count == 300 ? 0 : 1)
