// The CUDA graph nodes a traced process created and cloned, as kprof's tracer records them while
// graphs are captured or built (the "graph_nodes" table of its trace's closing "kprof" object,
// docs/tracer.md): what a replayed kernel's "graph node id" is resolved to — the kernel node as
// it was captured, its graph, its place in the graph and the NVTX ranges open on the capturing
// thread. A trace reader that finds one hands it to its sink once, after every event
// (TraceEventSink::on_graph_nodes); a trace without one never calls it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kprof::importers {

// The tracer's bounds (docs/tracer.md), which a table read is held to: more rows, clone pairs,
// or a deeper stack is not a table this tracer wrote, and is refused whole. Strings are cut to
// the reader's own bounds instead (a kernel name the driver gives may be long).
inline constexpr std::size_t kMaxGraphNodeRows = 1'000'000;
inline constexpr std::size_t kMaxGraphNodeClones = 1'000'000;
inline constexpr std::size_t kMaxGraphNodeStackDepth = 64;
inline constexpr std::size_t kMaxGraphRangeNameBytes = 256;
// What the reader keeps of a kernel name (the table's are mangled; a templated one runs to
// thousands of bytes).
inline constexpr std::size_t kMaxGraphKernelNameBytes = 4096;
// A "clones" walk from a replayed node to the captured row it was cloned from: a longer chain,
// or a cycle, leaves the node not placed.
inline constexpr std::size_t kMaxCloneChain = 16;

struct GraphNodeRange {
  std::string domain;  // "" for NVTX's default domain, else the domain's registered name
  std::string name;    // the range's message
};

// One kernel, memcpy or memset node, in creation order.
struct GraphNode {
  std::uint64_t node = 0;    // cuptiGetGraphNodeId: unique in the process
  std::uint64_t graph = 0;   // cuptiGetGraphId of the graph it was created in
  std::uint64_t order = 0;   // its position among the nodes created in that graph
  std::int64_t tid = 0;      // the creating (capturing) thread
  std::uint32_t kernel = 0;  // index into GraphNodeTable::kernels
  std::array<std::uint32_t, 3> grid{{0, 0, 0}}, block{{0, 0, 0}};  // 0 for copy and set nodes
  std::uint64_t shared_bytes = 0;
  std::uint32_t stack = 0;  // index into GraphNodeTable::stacks
};

// What the tracer counted of what it could not table (all zero in a complete table).
struct GraphNodeCounts {
  std::uint64_t kernel_nodes = 0, copy_nodes = 0, other_nodes = 0, not_kept = 0, unnamed = 0,
                ranges_cut = 0, clones_not_kept = 0;
};

struct GraphNodeTable {
  std::vector<GraphNode> nodes;
  // Names as the driver gives them (mangled); "[memcpy]" and "[memset]" for copy and set nodes;
  // "" where the name could not be read.
  std::vector<std::string> kernels;
  // The NVTX push/pop range stack open on the creating thread, outermost first, as indices into
  // ranges; stacks[0] is [] (no range open).
  std::vector<std::vector<std::uint32_t>> stacks;
  std::vector<GraphNodeRange> ranges;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clones;  // {node, the node it cloned}
  GraphNodeCounts counts;
};

}  // namespace kprof::importers
