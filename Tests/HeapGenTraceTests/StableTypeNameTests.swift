import HeapGenTrace
import XCTest

final class StableTypeNameTests: XCTestCase {
    func testAnonymousContextAddressesBecomePrivate() {
        XCTAssertEqual(StableTypeName.of("Screens.SessionRegistry.(unknown context at $55e19e4d4fcc).Entry"),
                       "Screens.SessionRegistry.(private).Entry")
        XCTAssertEqual(StableTypeName.of("NIOPosix.PooledBuffer.(unknown context at $7f00aa).BackingStorage<Swift.(unknown context at $1).X>"),
                       "NIOPosix.PooledBuffer.(private).BackingStorage<Swift.(private).X>")
    }

    func testOtherNamesAreUnchanged() {
        for name in ["Demo.Node", "Demo.GenericBox<Swift.String>.Storage", "", "(unknown context at $)",
                     "(unknown context at $12", "A.(unknown context at $xyz).B", "(unknown context at $ab"] {
            XCTAssertEqual(StableTypeName.of(name), name)
        }
    }
}
