// swift-tools-version:6.0
// The fixture package of HeapGenTestingTests: a test target that uses the
// HeapGenTesting product the way a user's package would. The outer tests
// copy it to a scratch directory and set HEAPGEN_PACKAGE_ROOT to the heapgen
// checkout (default: the checkout this file lives in).
import Foundation
import PackageDescription

let root = Context.environment["HEAPGEN_PACKAGE_ROOT"] ?? "../../../.."
// SwiftPM names a path dependency after its directory.
let identity = URL(fileURLWithPath: root, relativeTo: URL(fileURLWithPath: Context.packageDirectory + "/"))
    .standardizedFileURL.lastPathComponent.lowercased()

let package = Package(
    name: "FixturePackage",
    dependencies: [
        .package(path: root),
    ],
    targets: [
        .testTarget(
            name: "FixtureTests",
            dependencies: [
                .product(name: "HeapGen", package: identity),
                .product(name: "HeapGenTesting", package: identity),
            ],
            // The classic closure retain cycle is rejected by Swift 6's Sendable checking.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
