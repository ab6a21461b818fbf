// Unit tests of own-code detection (OwnCode): which modules are the platform's, which
// functions are runtime plumbing, and which frame of a stack is the program's own.

import HeapGenSymbolication
import XCTest

final class OwnCodeTests: XCTestCase {
    func testRuntimeModules() {
        for path in [
            "/work/.build/debug/libHeapGenShim.so", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
            "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libpthread.so.0", "/lib/x86_64-linux-gnu/libc-2.31.so",
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libgcc_s.so.1",
            "/usr/lib/x86_64-linux-gnu/libunwind.so.8",
            "/opt/swift/usr/lib/swift/linux/libswiftCore.so", "/somewhere/libswiftCore.so",
            "/somewhere/libswift_Concurrency.so", "/somewhere/libswiftSwiftOnoneSupport.so",
            "/somewhere/libFoundationEssentials.so", "/somewhere/libFoundation.so", "/somewhere/lib_FoundationICU.so",
            "/somewhere/libdispatch.so", "/somewhere/libBlocksRuntime.so",
            "/root/.local/share/swiftly/toolchains/6.3.1/usr/lib/swift/linux/libMyThing.so", "linux-vdso.so.1",
        ] {
            XCTAssertTrue(OwnCode.isRuntimeModule(path), path)
        }
        for path in ["/work/.build/debug/heapgen-demo", "/usr/bin/app", "/work/.build/debug/libMyLib.so",
                     "/usr/lib/x86_64-linux-gnu/libcurl.so.4", "/opt/app/libcore.so"] {
            XCTAssertFalse(OwnCode.isRuntimeModule(path), path)
        }
        XCTAssertTrue(OwnCode.isSystemLibrary("/usr/lib/x86_64-linux-gnu/libcurl.so.4"))
        XCTAssertFalse(OwnCode.isSystemLibrary("/usr/bin/app"))
        XCTAssertFalse(OwnCode.isSystemLibrary("/usr/local/lib/libmine.so"))
    }

    func testRuntimeFunctions() {
        for name in [
            "malloc", "calloc", "operator new(unsigned long)", "operator new[](unsigned long)", "swift_allocObject",
            "swift_slowAlloc", "swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)",
            "std::vector<int, std::allocator<int> >::_M_realloc_insert(int const&)",
            "merged generic specialization <Swift.String> of Swift.Array.append(__owned A) -> ()",
            "generic specialization <Swift.UInt8> of Swift._allocateUninitializedArray<A>(Builtin.Word) -> ([A], Builtin.RawPointer)",
            "function signature specialization <Arg[0] = Dead> of Swift._ContiguousArrayBuffer.init(x: Swift.Int)",
            "(extension in Foundation):FoundationEssentials.NotificationCenter.addObserver(forName: Swift.Optional<Foundation.NSNotification.Name>) -> ()",
            "reabstraction thunk helper from @escaping @callee_guaranteed () -> () to @escaping @callee_guaranteed () -> (@out ())",
            "__swift_instantiateConcreteTypeFromMangledName",
        ] {
            XCTAssertTrue(OwnCode.isRuntimeFunction(name), name)
        }
        for name in [
            "heapgen_demo.ProfileViewModel.__allocating_init(name: Swift.String) -> heapgen_demo.ProfileViewModel",
            "closure #1 () -> () in heapgen_demo.ProfileViewModel.bind() -> ()", "remember", "lookup.isra.0",
            "static App.Cache.shared.getter : App.Cache", "malloc_wrapper_of_mine", "App.Swifty.run() -> ()",
            "generic specialization <Swift.Int> of App.Box.init(A) -> App.Box<A>",
        ] {
            XCTAssertFalse(OwnCode.isRuntimeFunction(name), name)
        }
    }

    func testFirstUserFrameSkipsRuntimeAndLinelessAllocatingInit() {
        let app = "/work/.build/debug/App"
        let frames = [
            SymbolicatedFrame(function: "swift_slowAlloc", module: "/opt/swift/usr/lib/swift/linux/libswiftCore.so", address: 1),
            SymbolicatedFrame(function: "swift_allocObject", module: "/opt/swift/usr/lib/swift/linux/libswiftCore.so", address: 2),
            SymbolicatedFrame(function: "App.Model.__allocating_init() -> App.Model", file: "/src/main.swift", module: app, address: 3),
            SymbolicatedFrame(function: "App.Screen.init() -> App.Screen", file: "/src/main.swift", line: 40, module: app, address: 4),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 3, "__allocating_init has no line: its caller does")
        // Without a later line, the __allocating_init itself.
        XCTAssertEqual(OwnCode.firstUserFrame(Array(frames.prefix(3))), 2)
        // Without debug info at all (no file), the first own frame.
        let stripped = frames.map { f -> SymbolicatedFrame in var f = f; f.file = nil; f.line = nil; return f }
        XCTAssertEqual(OwnCode.firstUserFrame(stripped), 2)
    }

    func testFirstUserFrameWithStaticRuntimeAndSpecializations() {
        let app = "/work/.build/release/App"
        let frames = [
            SymbolicatedFrame(function: "swift_slowAlloc", module: app, address: 1),
            SymbolicatedFrame(function: "swift_allocObject", module: app, address: 2),
            SymbolicatedFrame(function: "generic specialization <Swift.UInt8> of Swift._allocateUninitializedArray<A>(Builtin.Word) -> ([A], Builtin.RawPointer)",
                         file: "/build/swift/stdlib/public/core/ArrayShared.swift", line: 80, module: app, address: 3, inlined: true),
            SymbolicatedFrame(function: "App.Cache.image(named: Swift.String) -> [Swift.UInt8]", file: "/src/Cache.swift",
                         line: 12, module: app, address: 3),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 3)
    }

    func testFirstUserFrameCompilerGeneratedAndFallbacks() {
        let app = "/app/bin"
        let generated = [
            SymbolicatedFrame(function: "__swift_instantiateConcreteTypeFromMangledName", file: "/<compiler-generated>", module: app, address: 1),
            SymbolicatedFrame(function: "App.f() -> ()", file: "/src/a.swift", line: 3, module: app, address: 2),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(generated), 1)

        // Only libc, libcurl and the loader: libcurl is the best there is.
        let curl = [
            SymbolicatedFrame(function: "malloc", module: "/lib/x86_64-linux-gnu/libc.so.6", address: 1),
            SymbolicatedFrame(function: "curl_easy_init", module: "/usr/lib/x86_64-linux-gnu/libcurl.so.4", address: 2),
            SymbolicatedFrame(function: nil, module: "/lib64/ld-linux-x86-64.so.2", address: 3),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(curl), 1)

        // No name but in the program's module: its own code.
        XCTAssertEqual(OwnCode.firstUserFrame([
            SymbolicatedFrame(module: "/lib/x86_64-linux-gnu/libc.so.6", address: 1), SymbolicatedFrame(module: app, address: 2),
        ]), 1)

        // Nothing but runtime, or no module at all.
        XCTAssertNil(OwnCode.firstUserFrame([
            SymbolicatedFrame(function: "operator new(unsigned long)", module: "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", address: 1),
            SymbolicatedFrame(module: nil, address: 2),
        ]))
        XCTAssertNil(OwnCode.firstUserFrame([]))
    }

    /// A Rust program links its standard library in: `alloc::alloc::alloc` and `Vec`'s
    /// growth sit in the program's module, with files under `/rustc/<commit>/library/`
    /// (or no file without debug info). The user frame is the program's function.
    func testFirstUserFrameSkipsRustsStandardLibrary() {
        let exe = "/tmp/app/target/release/app"
        let std = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/"
        let frames = [
            SymbolicatedFrame(function: "alloc::alloc::alloc", file: std + "alloc.rs", line: 95, module: exe, address: 1),
            SymbolicatedFrame(function: "<alloc::alloc::Global as core::alloc::Allocator>::allocate", file: std + "alloc.rs",
                              line: 429, module: exe, address: 2),
            SymbolicatedFrame(function: "alloc::vec::Vec<T,A>::with_capacity_in", file: std + "vec/mod.rs", line: 3, module: exe, address: 3),
            SymbolicatedFrame(function: "main::leak_box", file: "/tmp/app/src/main.rs", line: 12, module: exe, address: 4),
            SymbolicatedFrame(function: "main::main", file: "/tmp/app/src/main.rs", line: 17, module: exe, address: 5),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 3)
        // Without debug info: by name.
        let stripped = frames.map { SymbolicatedFrame(function: $0.function, module: exe, address: $0.address) }
        XCTAssertEqual(OwnCode.firstUserFrame(stripped), 3)
        for name in ["__rust_alloc", "__rdl_alloc", "core::ptr::drop_in_place<u8>", "<alloc::string::String as core::clone::Clone>::clone"] {
            XCTAssertTrue(OwnCode.isRuntimeFunction(name), name)
        }
        XCTAssertFalse(OwnCode.isRuntimeFunction("<app::Cache as core::fmt::Debug>::fmt"))
    }

    /// An interpreter's executable is a launcher: its own frames are an unnamed `main` over
    /// libc's start; the site is the interpreter library's innermost named frame past its
    /// allocation wrappers. A `main` with source, or own code that is more than an entry,
    /// stays the user frame.
    func testALaunchersSitesAreNamedInsideItsLibrary() {
        let ruby = "/usr/bin/ruby3.1", lib = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
        let libc = "/lib/x86_64-linux-gnu/libc.so.6"
        var frames = [
            SymbolicatedFrame(function: "malloc", module: libc, address: 1),
            SymbolicatedFrame(function: "ruby_xmalloc", module: lib, address: 2),
            SymbolicatedFrame(module: lib, address: 3),
            SymbolicatedFrame(function: "rb_str_plus", module: lib, address: 4),
            SymbolicatedFrame(function: "ruby_run_node", module: lib, address: 5),
            SymbolicatedFrame(module: ruby, address: 6),
            SymbolicatedFrame(function: "__libc_start_call_main", module: libc, address: 7),
            SymbolicatedFrame(function: "_start", module: ruby, address: 8),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 3, "rb_str_plus, not ruby3.1+0x6")
        frames[3].function = nil
        frames[4].function = nil
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 2, "no name in the library: its first frame past the wrappers")
        // A main with its source is the program's own code, whatever it called.
        var withSource = frames
        withSource[5] = SymbolicatedFrame(function: "main", file: "/src/app.c", line: 5, module: ruby, address: 6)
        XCTAssertEqual(OwnCode.firstUserFrame(withSource), 5)
        // Own code that is more than the entry: as before.
        var more = frames
        more.insert(SymbolicatedFrame(function: "run_script", module: ruby, address: 9), at: 5)
        XCTAssertEqual(OwnCode.firstUserFrame(more), 5)
    }
}
