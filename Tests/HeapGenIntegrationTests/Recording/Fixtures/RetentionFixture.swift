// Swift fixture for the reference graph's field names (module name "Fixture"): an
// EventBus whose `subscribers` array holds Handlers (a subclass adding a stored property
// to its superclass's). Prints, for each stored reference, the byte offset at which the
// object's memory holds it (found by scanning the instance's words), to check the names
// heapgen reads from the class metadata against.
import Glibc

class Base {
    var id: Int = 7
    var owner: AnyObject?
}

final class Handler: Base {
    var tag: Int = 3
    var bus: EventBus?
}

final class EventBus {
    var count: Int = 0
    var name: String = "bus"
    var subscribers: [Handler] = []
    var last: Handler?
}

func offset(of target: AnyObject, in object: AnyObject) -> Int {
    let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    let want = UInt(bitPattern: Unmanaged.passUnretained(target).toOpaque())
    for k in 0..<16 where base.load(fromByteOffset: 8 * k, as: UInt.self) == want { return 8 * k }
    return -1
}

var bus: EventBus? = EventBus()
let owner = EventBus()
for i in 0..<3 {
    let h = Handler()
    h.id = i
    h.bus = bus
    h.owner = owner
    bus!.subscribers.append(h)
}
bus!.last = bus!.subscribers[0]
let h = bus!.subscribers[0]
print("EventBus.last \(offset(of: h, in: bus!))")
print("Handler.bus \(offset(of: bus!, in: h))")
print("Base.owner \(offset(of: owner, in: h))")
print("instance EventBus \(class_getInstanceSize(bus!)) Handler \(class_getInstanceSize(h))")

func class_getInstanceSize(_ o: AnyObject) -> Int {
    // The metadata's instanceSize (u32 at +24), as the runtime allocates it.
    let metadata = UnsafeRawPointer(Unmanaged.passUnretained(o).toOpaque()).load(as: UnsafeRawPointer.self)
    return Int(metadata.load(fromByteOffset: 24, as: UInt32.self))
}
