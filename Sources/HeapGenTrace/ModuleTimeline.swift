// Which module held an address at a point of a trace: its module loads and unloads, replayed.

/// The modules (executables and shared objects) mapped over a trace, from its `moduleLoad`
/// and `moduleUnload` records (``ModuleEvent``), so that a frame address is named from the
/// module that held it when its stack was recorded: a library unloaded and another loaded at
/// the same place later does not mix up names.
///
/// One timeline for every reader of module events: reports and diffs (through
/// HeapGenSymbolication) and the collector (the modules loaded now, for in-test answers
/// and fork snapshots). It lives with the trace records it replays, below both.
///
/// A position is a record index of the trace (``ModuleEvent/recordIndex``, or a ring position
/// in the collector): the modules *at* a position are those loaded by events strictly before
/// it. An unload removes the latest module loaded with its load bias.
///
/// ```swift
/// let timeline = ModuleTimeline(events: analysis.modules)
/// let module = timeline.module(containing: 0x5555_5555_5190, at: analysis.recordIndex(ofStack: 7)!)
/// ```
public struct ModuleTimeline: Sendable {
    /// Loads and unloads, in trace order.
    public let events: [ModuleEvent]

    /// The timeline of `events` (in trace order, as ``Analysis/modules`` holds them).
    public init(events: [ModuleEvent]) {
        self.events = events
    }

    /// Modules all loaded at position 0 and never unloaded: the modules of a live process now.
    /// Ask at any position after 0 (`UInt64.max` is fine).
    public init(loaded: [ModuleRecord]) {
        events = loaded.map { ModuleEvent(kind: .load, loadBias: $0.loadBias, module: $0, recordIndex: 0, generation: 0) }
    }

    /// The modules mapped just before record `position`, oldest first.
    public func modules(at position: UInt64) -> [ModuleRecord] {
        var cursor = self.cursor()
        cursor.advance(to: position)
        return cursor.loaded
    }

    /// The latest module mapped just before record `position` with `address` in one of its
    /// `PT_LOAD` segments, or `nil` (generated code, or an address no recorded module held).
    public func module(containing address: UInt64, at position: UInt64) -> ModuleRecord? {
        var cursor = self.cursor()
        cursor.advance(to: position)
        return cursor.module(containing: address)
    }

    /// A replay from the start of the trace, for looking up many stacks in position order
    /// without starting over for each.
    public func cursor() -> Cursor {
        Cursor(events: events)
    }

    /// A forward replay of a ``ModuleTimeline``: positions only grow.
    public struct Cursor {
        private let events: [ModuleEvent]
        private var next = 0
        /// Modules mapped at the current position, oldest first.
        public private(set) var loaded: [ModuleRecord] = []
        /// Answers since the last change of `loaded` (stacks share most of their frames).
        private var memo: [UInt64: ModuleRecord?] = [:]
        /// Changes of `loaded` so far: a caller's own answers stay good while it is the same.
        public private(set) var changes = 0

        init(events: [ModuleEvent]) {
            self.events = events
        }

        /// Applies the events before record `position` not applied yet; an earlier position
        /// than the last one changes nothing.
        public mutating func advance(to position: UInt64) {
            while next < events.count && events[next].recordIndex < position {
                let event = events[next]
                switch event.kind {
                case .load:
                    if let module = event.module { loaded.append(module) }
                case .unload:
                    if let i = loaded.lastIndex(where: { $0.loadBias == event.loadBias }) { loaded.remove(at: i) }
                }
                memo.removeAll(keepingCapacity: true)
                changes += 1
                next += 1
            }
        }

        /// The latest mapped module with `address` in one of its segments, at the current position.
        public mutating func module(containing address: UInt64) -> ModuleRecord? {
            if let known = memo[address] { return known }
            let found = loaded.last { $0.contains(address) }
            memo[address] = .some(found)
            return found
        }
    }
}

extension ModuleRecord {
    /// True when `address` lies in one of the module's `PT_LOAD` segments (at its load bias).
    public func contains(_ address: UInt64) -> Bool {
        segments.contains { segment in
            let start = loadBias &+ segment.vaddr
            return address >= start && address - start < segment.memsz
        }
    }
}
