// The capture-time node table: every CUDA graph node made in the process (stream capture or the
// graph API), with its kernel, launch shape and the NVTX push/pop ranges open on the thread that
// made it, and which nodes were cloned from which (instantiation, graph clone, exec update), so a
// replayed kernel record's "graph node id" finds the node it was captured as. Kept for the
// process's life at bounded memory; every window's trace carries all of it ("graph_nodes" in the
// closing "kprof" object, docs/tracer.md). Pure: nothing here calls CUDA, CUPTI or NVTX; the
// injection feeds it what CUPTI's callbacks say.
//
// Threads: a RangeStack belongs to one thread and is used by it alone, without a lock (NVTX
// pushes and pops run on every application thread for the process's life: after a thread's first
// push they allocate nothing). The table is shared: one mutex, taken when a node is made or
// cloned, a domain or string registered, or a snapshot taken. No entry point throws; running out
// of memory is counted, never thrown into the application.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kprof::tracer {

// The bounds, documented in docs/tracer.md. Tests pass smaller ones.
struct GraphNodeLimits {
  std::size_t max_nodes = 1'000'000;   // rows (kernel, memcpy and memset nodes)
  std::size_t max_clones = 1'000'000;  // [node, original] pairs
  std::size_t max_ranges = 250'000;    // distinct (domain, name) ranges
  std::size_t max_stacks = 250'000;    // distinct stacks
  std::size_t max_names = 65'536;      // registered domains, and registered strings
  std::size_t max_range_bytes = 256;   // a range name's length, cut at a UTF-8 boundary
  std::size_t max_depth = 64;          // ranges kept per stack, outermost first
};

// The NVTX push/pop ranges open on one thread, outermost first, across domains. A pop removes the
// innermost open range of its own domain (NVTX keeps one stack per domain and thread). Names are
// copied on push (the caller's string may not outlive the call) into storage reserved on the
// first push, so later pushes and pops never allocate. Ranges deeper than max_depth are counted,
// not kept.
class RangeStack {
 public:
  struct Frame {
    const void* domain = nullptr;      // nullptr: NVTX's default domain
    const void* registered = nullptr;  // a registered string's handle; else the text is in text()
    std::uint32_t offset = 0, length = 0;
    bool cut = false;  // the text was longer than max_range_bytes
  };

  explicit RangeStack(std::size_t max_depth = GraphNodeLimits{}.max_depth,
                      std::size_t max_range_bytes = GraphNodeLimits{}.max_range_bytes) noexcept
      : max_depth_(max_depth), max_bytes_(max_range_bytes) {}

  void push_text(const void* domain, const char* text) noexcept;     // ASCII or UTF-8
  void push_wide(const void* domain, const wchar_t* text) noexcept;  // non-ASCII kept as '?'
  void push_registered(const void* domain, const void* handle) noexcept;
  void pop(const void* domain) noexcept;  // a pop without an open range of its domain is ignored

  const std::vector<Frame>& frames() const { return frames_; }
  std::string_view text(const Frame& frame) const {
    return std::string_view(arena_).substr(frame.offset, frame.length);
  }
  // Open ranges beyond max_depth (or that could not be stored).
  std::size_t overflow() const { return overflow_; }
  // Changes with every push and pop: the table's interned stack for this thread is reused while
  // it stays the same.
  std::uint64_t version() const { return version_; }

  // The table's memo of this stack's id (the table reads and writes it under its own mutex, on
  // this stack's thread).
  struct InternedMemo {
    const void* table = nullptr;
    std::uint64_t version = 0;
    std::uint32_t stack = 0;
  } memo;

 private:
  bool reserve() noexcept;
  void push_frame(const void* domain, const void* registered, std::string_view text,
                  bool cut) noexcept;

  std::size_t max_depth_, max_bytes_;
  std::vector<Frame> frames_;
  std::string arena_;
  std::size_t overflow_ = 0;
  std::uint64_t version_ = 1;
  bool reserved_ = false, unusable_ = false;
};

enum class GraphNodeKind : std::uint8_t { kKernel, kMemcpy, kMemset, kOther };

// What the injection read about a node when CUPTI said it was made.
struct CreatedNode {
  std::uint64_t node = 0;   // cuptiGetGraphNodeId
  std::uint32_t graph = 0;  // cuptiGetGraphId of the graph it was made in
  std::uint32_t tid = 0;    // the making thread (gettid)
  GraphNodeKind kind = GraphNodeKind::kOther;
  std::string_view kernel;  // kernel nodes: the driver's (mangled) name; "" when not read
  std::array<std::uint32_t, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};
  std::uint32_t shared_bytes = 0;  // dynamic shared memory per block
};

struct GraphNodeRow {
  std::uint64_t node = 0;
  std::uint32_t graph = 0, order = 0, tid = 0, kernel = 0;
  std::array<std::uint32_t, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};
  std::uint32_t shared_bytes = 0, stack = 0;
  GraphNodeKind kind = GraphNodeKind::kKernel;
  bool dropped = false;  // found to be a clone: not written
};

struct GraphNodeCounts {
  std::uint64_t kernel_nodes = 0, copy_nodes = 0;  // rows written (computed when serialised)
  std::uint64_t other_nodes = 0;                   // host, event, child graph … nodes: not tabled
  std::uint64_t not_kept = 0;                      // kernel, memcpy, memset nodes over the bound
  std::uint64_t unnamed = 0;                       // rows whose kernel name was not read
  std::uint64_t ranges_cut = 0;  // names cut, stacks over the depth, ranges/stacks over the bound
  std::uint64_t clones_not_kept = 0;
};

struct GraphRange {
  std::string domain, name;
};

// A consistent copy of the table, taken under its mutex and serialised outside it.
struct GraphNodeSnapshot {
  std::vector<GraphNodeRow> rows;  // creation order, dropped rows left out
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clones;  // [node, original]
  std::vector<std::string> kernels;
  std::vector<GraphRange> ranges;
  std::vector<std::vector<std::uint32_t>> stacks;
  GraphNodeCounts counts;  // other_nodes, not_kept, ranges_cut, clones_not_kept
};

class GraphNodeTable {
 public:
  explicit GraphNodeTable(GraphNodeLimits limits = {});

  // nvtxDomainCreateA / nvtxDomainRegisterStringA as seen: names ranges pushed with them later.
  void domain_created(const void* handle, const char* name) noexcept;
  void string_registered(const void* handle, const char* text) noexcept;

  // A node was made (CUPTI's GRAPHNODE_CREATED), on the thread whose ranges `stack` holds
  // (nullptr: none ever pushed there).
  void node_created(const CreatedNode& node, RangeStack* stack) noexcept;
  // `node` was made as a clone of `original` (GRAPHNODE_CLONED). CUPTI reports the clone as made
  // first (GRAPHNODE_CREATED on the cloning thread, with that thread's ranges): its row, if
  // still among the last rows made, is dropped here; any other is left out when serialised.
  void node_cloned(std::uint64_t node, std::uint64_t original, GraphNodeKind kind) noexcept;
  // CUPTI said a node was made or cloned but its id could not be read: counted.
  void node_unread(GraphNodeKind kind) noexcept;
  void clone_unread(GraphNodeKind kind) noexcept;

  GraphNodeSnapshot snapshot() const;  // may throw std::bad_alloc (the writer's thread)

  static constexpr std::size_t kRecent = 64;

 private:
  std::uint32_t intern_kernel_locked(std::string_view name);
  bool intern_range_locked(std::string_view domain, std::string_view name, bool cut,
                           std::uint32_t* id);
  std::uint32_t intern_stack_locked(RangeStack* stack);
  std::string_view domain_name_locked(const void* handle) const;

  enum class Outcome : std::uint8_t { kNone, kRow, kNotKept, kOther };
  struct Recent {
    std::uint64_t node = 0;
    std::uint64_t row = 0;
    Outcome outcome = Outcome::kNone;
  };
  void remember_locked(std::uint64_t node, Outcome outcome, std::uint64_t row);

  GraphNodeLimits limits_;
  mutable std::mutex mutex_;
  std::deque<GraphNodeRow> rows_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> clones_;
  std::unordered_map<std::uint32_t, std::uint32_t> next_order_;  // by graph
  // Interned: each string once, in a deque (its elements never move), looked up by view.
  std::deque<std::string> kernels_, ranges_, stacks_;  // ranges: "domain\0name"; stacks: packed
  std::unordered_map<std::string_view, std::uint32_t> kernel_ids_, range_ids_, stack_ids_;
  std::unordered_map<const void*, std::string> domains_, strings_;
  std::string key_;  // reused for look-ups
  std::array<Recent, kRecent> recent_{};
  std::size_t recent_next_ = 0;
  GraphNodeCounts counts_;
};

// The "graph_nodes" object (docs/tracer.md): rows whose node is a clone's are left out (their
// original is in the table); kernel_nodes, copy_nodes and unnamed count the rows written.
std::string graph_nodes_json(const GraphNodeSnapshot& snapshot);

}  // namespace kprof::tracer
