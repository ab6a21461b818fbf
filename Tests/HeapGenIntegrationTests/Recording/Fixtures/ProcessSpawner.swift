// Issue 7, item 13: Foundation's Process starts argv[1] with its inherited
// descriptors closed; the child must be traced all the same.
import Foundation

let child = Process()
child.executableURL = URL(fileURLWithPath: CommandLine.arguments[1])
do {
    try child.run()
} catch {
    print("cannot run: \(error)")
    exit(2)
}
child.waitUntilExit()
print("child returned \(child.terminationStatus)")
