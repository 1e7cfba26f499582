#include "importers/chrome_trace/graph_node_table_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "common/utf8.h"

namespace kprof::importers {
namespace {

namespace ondemand = simdjson::ondemand;

// The columns the analysis reads, as version 1 names them; a table may carry more (ignored).
enum Column : std::size_t {
  kColumnNode,
  kColumnGraph,
  kColumnOrder,
  kColumnTid,
  kColumnKernel,
  kColumnGridX,
  kColumnGridY,
  kColumnGridZ,
  kColumnBlockX,
  kColumnBlockY,
  kColumnBlockZ,
  kColumnSharedBytes,
  kColumnStack,
  kColumnCount
};
constexpr std::array<std::string_view, kColumnCount> kColumnNames = {
    "node",   "graph",   "order",   "tid",     "kernel",       "grid_x", "grid_y",
    "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stack"};

[[noreturn]] void refuse(const std::string& message) { throw GraphNodeTableError(message); }

void need(simdjson::error_code error, std::string_view where, std::string_view what) {
  if (error != simdjson::SUCCESS) {
    refuse(fmt::format("{}: {} ({})", where, what, simdjson::error_message(error)));
  }
}

// A string cut to at most `bound` bytes and made valid UTF-8 (a cut inside a character, or bytes
// that are not UTF-8, become U+FFFD).
std::string bounded_text(std::string_view text, std::size_t bound) {
  return to_valid_utf8(text.substr(0, bound));
}

ondemand::array array_field(ondemand::object& table, std::string_view key) {
  ondemand::array array;
  need(table.find_field_unordered(key).get_array().get(array), key,
       "wanted an array, as version 1 writes it");
  return array;
}

std::vector<std::string> read_kernels(ondemand::object& table) {
  std::vector<std::string> kernels;
  std::size_t i = 0;
  for (auto element : array_field(table, "kernels")) {
    std::string where = fmt::format("kernels[{}]", i++);
    if (kernels.size() == kMaxGraphNodeRows) {
      refuse(fmt::format("kernels: more than {} names", kMaxGraphNodeRows));
    }
    std::string_view name;
    need(element.get_string().get(name), where, "wanted a string");
    kernels.push_back(bounded_text(name, kMaxGraphKernelNameBytes));
  }
  return kernels;
}

std::vector<GraphNodeRange> read_ranges(ondemand::object& table) {
  std::vector<GraphNodeRange> ranges;
  std::size_t i = 0;
  for (auto element : array_field(table, "ranges")) {
    std::string where = fmt::format("ranges[{}]", i++);
    if (ranges.size() == kMaxGraphNodeRows) {
      refuse(fmt::format("ranges: more than {} ranges", kMaxGraphNodeRows));
    }
    ondemand::object object;
    need(element.get_object().get(object), where, "wanted {\"domain\", \"name\"}");
    GraphNodeRange range;
    bool named = false;
    for (auto field : object) {
      std::string_view key;
      need(field.unescaped_key().get(key), where, "a key that is no string");
      std::string_view text;
      if (key == "domain" || key == "name") {
        need(field.value().get_string().get(text), fmt::format("{}.{}", where, key),
             "wanted a string");
        (key == "domain" ? range.domain : range.name) = bounded_text(text, kMaxGraphRangeNameBytes);
        named = named || key == "name";
      }
    }
    if (!named) refuse(where + ": no \"name\"");
    ranges.push_back(std::move(range));
  }
  return ranges;
}

std::vector<std::vector<std::uint32_t>> read_stacks(ondemand::object& table, std::size_t ranges) {
  std::vector<std::vector<std::uint32_t>> stacks;
  std::size_t i = 0;
  for (auto element : array_field(table, "stacks")) {
    std::string where = fmt::format("stacks[{}]", i++);
    if (stacks.size() == kMaxGraphNodeRows + 1) {
      refuse(fmt::format("stacks: more than {} stacks", kMaxGraphNodeRows + 1));
    }
    ondemand::array array;
    need(element.get_array().get(array), where, "wanted an array of range indices");
    std::vector<std::uint32_t> stack;
    for (auto entry : array) {
      std::uint64_t index = 0;
      need(entry.get_uint64().get(index), where, "wanted range indices (integers from 0)");
      if (index >= ranges) {
        refuse(fmt::format("{}: range {} where \"ranges\" holds {}", where, index, ranges));
      }
      if (stack.size() == kMaxGraphNodeStackDepth) {
        refuse(fmt::format("{}: deeper than {} ranges", where, kMaxGraphNodeStackDepth));
      }
      stack.push_back(static_cast<std::uint32_t>(index));
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

// Each version-1 column's position in the table's "columns" (nullopt: a column it lacks).
std::array<std::size_t, kColumnCount> read_columns(ondemand::object& table, std::size_t& count) {
  std::array<std::optional<std::size_t>, kColumnCount> found;
  count = 0;
  for (auto element : array_field(table, "columns")) {
    std::string_view name;
    need(element.get_string().get(name), fmt::format("columns[{}]", count), "wanted a string");
    auto known = std::find(kColumnNames.begin(), kColumnNames.end(), name);
    if (known != kColumnNames.end()) {
      std::size_t column = static_cast<std::size_t>(known - kColumnNames.begin());
      if (found[column]) refuse(fmt::format("columns: \"{}\" named twice", name));
      found[column] = count;
    }
    if (++count > 256) refuse("columns: more than 256");
  }
  std::array<std::size_t, kColumnCount> positions{};
  for (std::size_t c = 0; c < kColumnCount; ++c) {
    if (!found[c]) refuse(fmt::format("columns: no \"{}\"", kColumnNames[c]));
    positions[c] = *found[c];
  }
  return positions;
}

std::vector<GraphNode> read_nodes(ondemand::object& table,
                                  const std::array<std::size_t, kColumnCount>& positions,
                                  std::size_t columns, std::size_t kernels, std::size_t stacks) {
  // Each row's values by column position, reused row to row.
  std::vector<std::int64_t> signed_values(columns);
  std::vector<std::uint64_t> values(columns);
  std::vector<bool> negative(columns);
  std::vector<bool> known(columns, false);
  for (std::size_t position : positions) known[position] = true;
  std::vector<GraphNode> nodes;
  std::size_t row = 0;
  for (auto element : array_field(table, "nodes")) {
    std::string where = fmt::format("nodes[{}]", row++);
    if (nodes.size() == kMaxGraphNodeRows) {
      refuse(fmt::format("nodes: more than {} rows", kMaxGraphNodeRows));
    }
    ondemand::array array;
    need(element.get_array().get(array), where, "wanted an array of integers");
    std::size_t n = 0;
    for (auto entry : array) {
      if (n == columns) {
        refuse(fmt::format("{}: more values than the {} \"columns\" names", where, columns));
      }
      ondemand::value value;
      need(entry.get(value), where, "unreadable value");
      if (!known[n]) {  // a column this kprof does not read: any value
        ++n;
        continue;
      }
      // The token's text, read exactly: a node id is a uint64, a thread id may be negative.
      std::string_view token = value.raw_json_token();
      while (!token.empty() && (token.back() == ' ' || token.back() == '\n' ||
                                token.back() == '\r' || token.back() == '\t')) {
        token.remove_suffix(1);
      }
      negative[n] = !token.empty() && token.front() == '-';
      std::string_view digits = negative[n] ? token.substr(1) : token;
      auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), values[n]);
      if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
          (digits.size() > 1 && digits.front() == '0')) {
        refuse(fmt::format("{}: wanted integers, found {}", where,
                           bounded_text(token.substr(0, 40), 40)));
      }
      if (negative[n]) {
        if (values[n] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) {
          refuse(fmt::format("{}: {} is out of range", where, bounded_text(token, 40)));
        }
        signed_values[n] = static_cast<std::int64_t>(0 - values[n]);
      } else {
        signed_values[n] = 0;
      }
      ++n;
    }
    if (n != columns) {
      refuse(fmt::format("{}: {} values where \"columns\" names {}", where, n, columns));
    }
    auto unsigned_at = [&](Column column, std::uint64_t most) {
      std::size_t at = positions[column];
      if (negative[at] || values[at] > most) {
        refuse(fmt::format(
            "{}: {} {} is out of range", where, kColumnNames[column],
            negative[at] ? std::to_string(signed_values[at]) : std::to_string(values[at])));
      }
      return values[at];
    };
    GraphNode node;
    constexpr std::uint64_t kAny = std::numeric_limits<std::uint64_t>::max();
    constexpr std::uint64_t kDim = std::numeric_limits<std::uint32_t>::max();
    node.node = unsigned_at(kColumnNode, kAny);
    node.graph = unsigned_at(kColumnGraph, kAny);
    node.order = unsigned_at(kColumnOrder, kAny);
    {
      std::size_t at = positions[kColumnTid];
      if (!negative[at] &&
          values[at] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        refuse(fmt::format("{}: tid {} is out of range", where, values[at]));
      }
      node.tid = negative[at] ? signed_values[at] : static_cast<std::int64_t>(values[at]);
    }
    std::uint64_t kernel = unsigned_at(kColumnKernel, kAny);
    if (kernel >= kernels) {
      refuse(fmt::format("{}: kernel {} where \"kernels\" holds {}", where, kernel, kernels));
    }
    node.kernel = static_cast<std::uint32_t>(kernel);
    for (std::size_t d = 0; d < 3; ++d) {
      node.grid[d] =
          static_cast<std::uint32_t>(unsigned_at(static_cast<Column>(kColumnGridX + d), kDim));
      node.block[d] =
          static_cast<std::uint32_t>(unsigned_at(static_cast<Column>(kColumnBlockX + d), kDim));
    }
    node.shared_bytes = unsigned_at(kColumnSharedBytes, kAny);
    std::uint64_t stack = unsigned_at(kColumnStack, kAny);
    if (stack >= stacks) {
      refuse(fmt::format("{}: stack {} where \"stacks\" holds {}", where, stack, stacks));
    }
    node.stack = static_cast<std::uint32_t>(stack);
    nodes.push_back(node);
  }
  return nodes;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> read_clones(ondemand::object& table) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clones;
  ondemand::array array;
  auto field = table.find_field_unordered("clones");
  if (field.error() == simdjson::NO_SUCH_FIELD) return clones;  // a table of no clones
  need(field.get_array().get(array), "clones", "wanted an array of [node, original] pairs");
  std::size_t i = 0;
  for (auto element : array) {
    std::string where = fmt::format("clones[{}]", i++);
    if (clones.size() == kMaxGraphNodeClones) {
      refuse(fmt::format("clones: more than {} pairs", kMaxGraphNodeClones));
    }
    ondemand::array pair;
    need(element.get_array().get(pair), where, "wanted [node, original]");
    std::uint64_t ids[2] = {0, 0};
    std::size_t n = 0;
    for (auto entry : pair) {
      if (n == 2) refuse(where + ": more than [node, original]");
      need(entry.get_uint64().get(ids[n]), where, "wanted node ids (integers from 0)");
      ++n;
    }
    if (n != 2) refuse(where + ": wanted [node, original]");
    clones.emplace_back(ids[0], ids[1]);
  }
  return clones;
}

GraphNodeCounts read_counts(ondemand::object& table) {
  GraphNodeCounts counts;
  auto field = table.find_field_unordered("counts");
  if (field.error() == simdjson::NO_SUCH_FIELD) return counts;
  ondemand::object object;
  need(field.get_object().get(object), "counts", "wanted an object of counts");
  for (auto entry : object) {
    std::string_view key;
    need(entry.unescaped_key().get(key), "counts", "a key that is no string");
    std::uint64_t* to = key == "kernel_nodes"      ? &counts.kernel_nodes
                        : key == "copy_nodes"      ? &counts.copy_nodes
                        : key == "other_nodes"     ? &counts.other_nodes
                        : key == "not_kept"        ? &counts.not_kept
                        : key == "unnamed"         ? &counts.unnamed
                        : key == "ranges_cut"      ? &counts.ranges_cut
                        : key == "clones_not_kept" ? &counts.clones_not_kept
                                                   : nullptr;
    if (to == nullptr) continue;  // a count this kprof does not know
    need(entry.value().get_uint64().get(*to), fmt::format("counts.{}", key),
         "wanted an integer from 0");
  }
  return counts;
}

}  // namespace

GraphNodeTable read_graph_node_table(ondemand::value value) {
  ondemand::object table;
  need(value.get_object().get(table), "graph_nodes", "wanted an object");
  std::uint64_t version = 0;
  need(table.find_field_unordered("version").get_uint64().get(version), "version",
       "wanted an integer");
  if (version != 1) {
    refuse(
        fmt::format("version {}: this kprof reads version 1 (a newer tracer wrote it?)", version));
  }
  GraphNodeTable result;
  std::size_t columns = 0;
  std::array<std::size_t, kColumnCount> positions = read_columns(table, columns);
  // Out of file order where need be (the object is searched again for each): what a row points
  // into is read before the rows.
  result.kernels = read_kernels(table);
  result.ranges = read_ranges(table);
  result.stacks = read_stacks(table, result.ranges.size());
  result.nodes = read_nodes(table, positions, columns, result.kernels.size(), result.stacks.size());
  result.clones = read_clones(table);
  result.counts = read_counts(table);
  // A node id names one node in the process: two rows of one id would make a replayed kernel's
  // node ambiguous.
  std::vector<std::uint64_t> ids;
  ids.reserve(result.nodes.size());
  for (const GraphNode& node : result.nodes) ids.push_back(node.node);
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end()) {
    refuse(fmt::format("nodes: node {} in two rows", *twice));
  }
  return result;
}

GraphNodeTable parse_graph_node_table(std::string_view json) {
  simdjson::padded_string padded(json);
  ondemand::parser parser;
  ondemand::document document;
  need(parser.iterate(padded).get(document), "graph_nodes", "not JSON");
  ondemand::value value;
  need(document.get_value().get(value), "graph_nodes", "not a JSON value");
  return read_graph_node_table(value);
}

}  // namespace kprof::importers
