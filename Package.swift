// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "heapgen",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "heapgen", targets: ["HeapGenCLI"]),
        // The preload library. Built as plain C with no Swift runtime in its
        // dependencies (see linkerSettings); tests and `heapgen` find it next
        // to the executable as libHeapGenShim.so.
        // Mark generations from Swift: HeapGen.mark, HeapGen.cycles.
        .library(name: "HeapGen", targets: ["HeapGen"]),
        .executable(name: "heapgen-demo", targets: ["heapgen-demo"]),
        // XCTest / Swift Testing helpers: expectNoGrowth, expectDeallocation.
        .library(name: "HeapGenTesting", targets: ["HeapGenTesting"]),
        .library(name: "HeapGenShim", type: .dynamic, targets: ["HeapGenShim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // In-target part: interposes the allocator, unwinds, writes the ring.
        .target(
            name: "HeapGenShim",
            path: "CShim",
            sources: ["src"],
            publicHeadersPath: "include",
            cSettings: [
                // The shim runs inside the target: always optimised, even in
                // debug builds, and with frame pointers so its own frames are cheap to skip.
                .unsafeFlags(["-O2", "-fno-omit-frame-pointer", "-fvisibility=hidden", "-D_GNU_SOURCE"]),
            ],
            linkerSettings: [
                .linkedLibrary("dl"),
                .linkedLibrary("pthread"),
                // -static-stdlib keeps libswiftCore out; the linker wrapper puts
                // --as-needed first so the libstdc++ and libm that swiftc names
                // (unused here) stay out of DT_NEEDED too. See CShim/tools/ld-as-needed.
                .unsafeFlags([
                    "-nostartfiles", "-static-stdlib",
                    "-use-ld=\(Context.packageDirectory)/CShim/tools/ld-as-needed",
                ]),
            ]
        ),
        // Collector-side C: ring consumer, fd passing, ELF inspection.
        .target(
            name: "CHeapGenCollector",
            cSettings: [
                .headerSearchPath("../../CShim/include"),
                .unsafeFlags(["-O2", "-D_GNU_SOURCE"]),
            ]
        ),
        // The trace file: records, writer, reader, validation, the live-heap model.
        // (HeapGenUnits: the one wording of incomplete stacks.)
        // (CZstd: compressed chunks. CPrefetch: the writer's hot loop.)
        .target(name: "HeapGenTrace", dependencies: ["HeapGenUnits", "CZstd", "CPrefetch"]),
        // zstd (libzstd-dev), for the trace's compressed chunks.
        .systemLibrary(name: "CZstd", path: "Sources/CZstd"),
        // One header: a cache prefetch, which Swift cannot spell.
        .systemLibrary(name: "CPrefetch", path: "Sources/CPrefetch"),
        // Units for people: counts, bytes and durations printed, sizes and durations parsed;
        // and the one XML/HTML escaper (HTML pages, JUnit). Depends on nothing, so every
        // module that prints, parses or writes markup can use it.
        .target(name: "HeapGenUnits"),
        // One strict JSON reader (with caps) and one string quoter; depends on nothing.
        .target(name: "HeapGenJSON"),
        // The control channel's requests and answers, declared once (collector and HeapGenTesting); no Foundation.
        .target(name: "HeapGenControlProtocol", dependencies: ["HeapGenJSON"]),
        // The collector: starts the program, accepts segments, drains rings into traces.
        // It depends on nothing above the trace: what needs analysis or symbols is injected (RecordServices).
        .target(name: "HeapGenRecord", dependencies: ["CHeapGenCollector", "HeapGenTrace", "HeapGenControlProtocol", "HeapGenUnits"]),
        // What the collector needs from above it: control answers needing analysis, symbolication or reports, and the end-of-recording symbol store.
        .target(
            name: "HeapGenRecordServices",
            dependencies: ["HeapGenRecord", "HeapGenControlProtocol", "HeapGenAnalysis", "HeapGenSymbolication", "HeapGenReport", "HeapGenTrace"]
        ),
        // Generations, per-site growth, abandoned / cache / leaked findings; the live heap
        // replayed to a trace point (what diffs and exports measure).
        .target(name: "HeapGenAnalysis", dependencies: ["HeapGenTrace", "HeapGenUnits"]),
        // Stacks of addresses to frames (module timeline, stored symbols, symbolizer), the one
        // frame type, own-code detection; Swift and C++ demangling.
        // (HeapGenTrace: module and symbols records; HeapGenAnalysis: the module events and
        // stacks of an analysis.)
        .target(name: "HeapGenSymbolication", dependencies: ["HeapGenTrace", "HeapGenAnalysis", "HeapGenJSON"]),
        // Findings + symbolication -> text and heapgen-report/1 JSON.
        .target(
            name: "HeapGenReport",
            dependencies: ["HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "HeapGenUnits"]
        ),
        // Generation diffs (between marks, between traces).
        .target(
            name: "HeapGenDiff",
            dependencies: ["HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "HeapGenUnits"]
        ),
        // heapgen-report/1 and heapgen-diff/1 as one self-contained HTML page (chart, findings, icicles).
        .target(name: "HeapGenHTML", dependencies: ["HeapGenAnalysis", "HeapGenSymbolication", "HeapGenReport", "HeapGenDiff", "HeapGenUnits", "HeapGenJSON"]),
        // Exports of the live heap at a trace point: pprof, collapsed stacks.
        .target(
            name: "HeapGenExport",
            dependencies: ["HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "CZlib"]
        ),
        // zlib (zlib1g-dev), for the pprof export's compressed gzip stream.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // CI leak gates: --fail-on, suppressions, baselines, JUnit / Markdown / SARIF.
        // (HeapGenReport: a gate judges a Report; HeapGenSymbolication: its frames, own code.)
        .target(name: "HeapGenGate", dependencies: ["HeapGenReport", "HeapGenSymbolication", "HeapGenUnits"]),
        // Asks the running collector for a verdict from inside a test process.
        .target(name: "HeapGenTesting", dependencies: ["HeapGen", "CHeapGenTestingStart", "HeapGenControlProtocol"]),
        // A constructor that asks heapgen to track a test binary from start-up.
        .target(name: "CHeapGenTestingStart"),
        // The command line; its folder is not named `heapgen`, which would collide
        // with `HeapGen` on a case-insensitive file system.
        .executableTarget(
            name: "HeapGenCLI",
            dependencies: [
                "HeapGenRecord", "HeapGenRecordServices", "HeapGenTrace", "HeapGenAnalysis", "HeapGenReport",
                "HeapGenDiff", "HeapGenExport", "HeapGenGate", "HeapGenHTML", "HeapGenUnits",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "HeapGen"),
        // The bundled demo. Swift 5 mode: the classic Foundation leak
        // patterns it shows are rejected by Swift 6's Sendable checking.
        .executableTarget(
            name: "heapgen-demo",
            dependencies: ["HeapGen"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Shared by the integration test targets: build products, scratch
        // directories, processes, fixture compilation, running heapgen.
        .target(name: "HeapGenTestSupport", dependencies: ["HeapGenTrace"], path: "Tests/HeapGenTestSupport"),
        // Unit tests, one target per module.
        .testTarget(name: "HeapGenTraceTests", dependencies: ["HeapGenTrace", "HeapGenTestSupport"]),
        .testTarget(name: "HeapGenUnitsTests", dependencies: ["HeapGenUnits"]),
        .testTarget(name: "HeapGenJSONTests", dependencies: ["HeapGenJSON"]),
        .testTarget(name: "HeapGenControlProtocolTests", dependencies: ["HeapGenControlProtocol", "HeapGenJSON"]),
        .testTarget(name: "HeapGenAnalysisTests", dependencies: ["HeapGenAnalysis", "HeapGenTrace", "HeapGenTestSupport"]),
        .testTarget(
            name: "HeapGenSymbolicationTests",
            dependencies: ["HeapGenSymbolication", "HeapGenAnalysis", "HeapGenTrace", "HeapGenTestSupport"],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "HeapGenReportTests", dependencies: ["HeapGenReport", "HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "HeapGenTestSupport"]),
        .testTarget(
            name: "HeapGenDiffTests",
            dependencies: ["HeapGenDiff", "HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "HeapGenTestSupport"]
        ),
        .testTarget(name: "HeapGenExportTests", dependencies: ["HeapGenExport", "HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTrace", "HeapGenTestSupport"]),
        .testTarget(
            name: "HeapGenGateTests",
            dependencies: ["HeapGenGate", "HeapGenAnalysis", "HeapGenReport", "HeapGenSymbolication", "HeapGenTestSupport"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "HeapGenHTMLTests",
            dependencies: ["HeapGenHTML", "HeapGenReport", "HeapGenDiff", "HeapGenAnalysis", "HeapGenSymbolication", "HeapGenTestSupport"]
        ),
        // HeapGenTesting inside real test packages (Fixtures/FixturePackage) run under heapgen.
        .testTarget(
            name: "HeapGenTestingTests",
            dependencies: ["HeapGenTesting", "HeapGen", "HeapGenTestSupport"],
            exclude: ["Fixtures"]
        ),
        // Black-box tests of the `heapgen` command: the real shim preloaded into real child
        // processes, real marks, reports parsed. One folder per area, each with its Fixtures.
        .testTarget(
            name: "HeapGenIntegrationTests",
            dependencies: ["HeapGenTrace", "HeapGenTestSupport"],
            exclude: ["Recording/Fixtures", "Reports/Fixtures", "DiffExport/Fixtures", "CLI/Fixtures"]
        ),
    ]
)
