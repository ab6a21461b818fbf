// Which function names are allocation wrappers (OwnCode), known ones and --alloc-fn's.

import HeapGenSymbolication
import XCTest

final class AllocationWrapperTests: XCTestCase {
    func testKnownWrappers() {
        for name in ["zmalloc", "zcalloc", "zrealloc", "ztrymalloc_usable_internal", "ztrycalloc_usable", "zmalloc_usable",
                     "xmalloc", "xcalloc", "xrealloc", "xstrdup", "g_malloc", "g_malloc0", "g_malloc_n", "g_slice_alloc",
                     "emalloc", "ecalloc", "_emalloc", "swift_slowAlloc", "swift_allocObject",
                     "_PyObject_Malloc", "PyObject_Malloc", "PyMem_RawMalloc", "_PyMem_DebugRawAlloc", "pymalloc_alloc",
                     "CRYPTO_zalloc", "CRYPTO_malloc", "CRYPTO_strdup", "ruby_xmalloc", "ruby_xmalloc2", "luaM_malloc_",
                     "l_alloc", "Tcl_Alloc", "Perl_safesysmalloc", "Perl_safesysrealloc", "palloc", "palloc0",
                     "MemoryContextAllocZero", "pstrdup", "pg_malloc", "AllocSetContextCreateInternal",
                     "os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)", "AllocateHeap(unsigned long, MEMFLAGS, AllocFailStrategy::AllocFailEnum)", "JLI_MemAlloc",
                     "operator new(unsigned long)", "operator new[](unsigned long)",
                     "operator new(unsigned long, std::align_val_t)", "operator new(unsigned long, std::nothrow_t const&)"] {
            XCTAssertTrue(OwnCode.isAllocationWrapper(name), name)
            XCTAssertTrue(OwnCode.isRuntimeFunction(name), name)
        }
        for name in ["main", "my_alloc", "createObject", "pvPortMalloc", "zmalloc_size_stats", "xmallocx_user", "app_malloc",
                     "PyObject_MallocStats", "new_keys_object", "CRYPTO_free", "ruby_xfree", "asn1_item_embed_new"] {
            XCTAssertFalse(OwnCode.isAllocationWrapper(name), name)
        }
    }

    func testUserWrappersExactPrefixAndSignature() {
        defer { OwnCode.setAllocationFunctions([]) }
        OwnCode.setAllocationFunctions(["my_alloc", "pool_*", "Arena::allocate"])
        XCTAssertTrue(OwnCode.isAllocationWrapper("my_alloc"))
        XCTAssertFalse(OwnCode.isAllocationWrapper("my_alloc_stats"))
        XCTAssertTrue(OwnCode.isAllocationWrapper("pool_get"))
        XCTAssertTrue(OwnCode.isAllocationWrapper("pool_"))
        XCTAssertTrue(OwnCode.isAllocationWrapper("Arena::allocate(unsigned long)"))
        XCTAssertFalse(OwnCode.isAllocationWrapper("Arena::reset()"))

        // The user frame is the first frame past them.
        let frames = [
            ReportFrameFixture.frame("malloc", module: "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            ReportFrameFixture.frame("pool_get", module: "/app/bin"),
            ReportFrameFixture.frame("my_alloc", module: "/app/bin"),
            ReportFrameFixture.frame("load_config", module: "/app/bin"),
        ]
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 3)
        OwnCode.setAllocationFunctions([])
        XCTAssertEqual(OwnCode.firstUserFrame(frames), 1)
    }
}

final class WrapperInternalsTests: XCTestCase {
    /// A stripped postgres: malloc ← AllocSetAlloc (static, unnamed) ← palloc ← the caller.
    /// The unnamed frame is palloc's own helper, not the site (every backend site was
    /// `postgres+0x5c7860`); an unnamed frame no wrapper called stays a site.
    func testUnnamedFramesAWrapperCalledAreTheWrappers() {
        let postgres = "/usr/lib/postgresql/15/bin/postgres"
        func unnamed(_ address: UInt64, _ module: String = postgres) -> SymbolicatedFrame {
            SymbolicatedFrame(function: nil, file: nil, line: nil, module: module, address: address)
        }
        func named(_ function: String, _ address: UInt64) -> SymbolicatedFrame {
            SymbolicatedFrame(function: function, file: nil, line: nil, module: postgres, address: address)
        }
        let libc = SymbolicatedFrame(function: "malloc", file: nil, line: nil,
                                     module: "/usr/lib/x86_64-linux-gnu/libc.so.6", address: 0x10)
        let stack = [libc, unnamed(0x5c7860), named("palloc", 0x5c9000), named("exec_simple_query", 0x400000)]
        XCTAssertEqual(OwnCode.firstUserFrame(stack), 3)
        // Through two unnamed helpers too; not across modules, nor past a named non-wrapper.
        XCTAssertEqual(OwnCode.firstUserFrame([libc, unnamed(1), unnamed(2), named("palloc", 3), named("f", 4)]), 4)
        XCTAssertEqual(OwnCode.firstUserFrame([libc, unnamed(1, "/opt/other"), named("palloc", 3), named("f", 4)]), 1)
        XCTAssertEqual(OwnCode.firstUserFrame([libc, unnamed(1), named("f", 2), named("palloc", 3)]), 1)
    }
}

enum ReportFrameFixture {
    static func frame(_ function: String, module: String) -> SymbolicatedFrame {
        SymbolicatedFrame(function: function, file: "/app/src/x.c", line: 1, module: module, address: 0x1000)
    }
}
