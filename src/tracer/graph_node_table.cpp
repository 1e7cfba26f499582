#include "tracer/graph_node_table.h"

#include <cstring>
#include <cwchar>
#include <limits>
#include <unordered_set>

#include "tracer/record_converter.h"

namespace kprof::tracer {
namespace {

// Marks a stack key whose thread had more ranges open than max_depth (left out when written).
constexpr std::uint32_t kOverDepth = std::numeric_limits<std::uint32_t>::max();

constexpr std::string_view kUnknownDomain = "(unknown domain)";
constexpr std::string_view kUnknownString = "(registered string)";

// The length of text cut to at most max bytes, never inside a UTF-8 sequence.
std::size_t cut_length(const char* text, std::size_t max, bool* cut) {
  std::size_t length = ::strnlen(text, max + 1);
  *cut = length > max;
  if (!*cut) return length;
  length = max;
  while (length > 0 && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
  return length;
}

void append_u32(std::string& key, std::uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  key.append(bytes, 4);
}

std::uint32_t read_u32(const std::string& key, std::size_t at) {
  std::uint32_t value = 0;
  std::memcpy(&value, key.data() + at, 4);
  return value;
}

}  // namespace

// ---- RangeStack ---------------------------------------------------------------------------

bool RangeStack::reserve() noexcept {
  if (reserved_) return true;
  if (unusable_) return false;
  try {
    frames_.reserve(max_depth_);
    arena_.reserve(max_depth_ * max_bytes_);
    reserved_ = true;
  } catch (...) {
    unusable_ = true;  // out of memory: this thread's ranges are counted, not kept
  }
  return reserved_;
}

void RangeStack::push_frame(const void* domain, const void* registered, std::string_view text,
                            bool cut) noexcept {
  ++version_;
  if (frames_.size() >= max_depth_ || !reserve()) {
    ++overflow_;
    return;
  }
  Frame frame;
  frame.domain = domain;
  frame.registered = registered;
  frame.offset = static_cast<std::uint32_t>(arena_.size());
  frame.length = static_cast<std::uint32_t>(text.size());
  frame.cut = cut;
  arena_.append(text);  // within the capacity reserved: no allocation
  frames_.push_back(frame);
}

void RangeStack::push_text(const void* domain, const char* text) noexcept {
  bool cut = false;
  std::size_t length = text ? cut_length(text, max_bytes_, &cut) : 0;
  push_frame(domain, nullptr, std::string_view(text ? text : "", length), cut);
}

void RangeStack::push_wide(const void* domain, const wchar_t* text) noexcept {
  // Converted in place at the arena's end (reserved: no allocation), then pushed as that text.
  ++version_;
  if (frames_.size() >= max_depth_ || !reserve()) {
    ++overflow_;
    return;
  }
  Frame frame;
  frame.domain = domain;
  frame.offset = static_cast<std::uint32_t>(arena_.size());
  std::size_t length = 0;
  for (; text && text[length] != 0; ++length) {
    if (length == max_bytes_) {
      frame.cut = true;
      break;
    }
    wchar_t c = text[length];
    arena_.push_back(c > 0 && c < 0x80 ? static_cast<char>(c) : '?');
  }
  frame.length = static_cast<std::uint32_t>(arena_.size() - frame.offset);
  frames_.push_back(frame);
}

void RangeStack::push_registered(const void* domain, const void* handle) noexcept {
  push_frame(domain, handle, std::string_view(), false);
}

void RangeStack::pop(const void* domain) noexcept {
  ++version_;
  if (overflow_ > 0) {  // the innermost ranges are the ones not kept
    --overflow_;
    return;
  }
  for (std::size_t i = frames_.size(); i-- > 0;) {
    if (frames_[i].domain != domain) continue;
    Frame frame = frames_[i];
    if (i + 1 == frames_.size()) {
      arena_.resize(frame.offset);
    } else {  // another domain's ranges were pushed after it: close the gap it leaves
      arena_.erase(frame.offset, frame.length);
      for (std::size_t j = i + 1; j < frames_.size(); ++j) frames_[j].offset -= frame.length;
    }
    frames_.erase(frames_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

// ---- GraphNodeTable -----------------------------------------------------------------------

GraphNodeTable::GraphNodeTable(GraphNodeLimits limits) : limits_(limits) {
  stacks_.emplace_back();  // stacks[0] = []: no range open
  stack_ids_.emplace(std::string_view(stacks_.back()), 0);
}

void GraphNodeTable::domain_created(const void* handle, const char* name) noexcept {
  if (!handle) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (domains_.size() >= limits_.max_names && !domains_.count(handle)) return;
    bool cut = false;
    std::size_t length = name ? cut_length(name, limits_.max_range_bytes, &cut) : 0;
    domains_[handle].assign(name ? name : "", length);
  } catch (...) {  // out of memory: its ranges' domain reads "(unknown domain)"
  }
}

void GraphNodeTable::string_registered(const void* handle, const char* text) noexcept {
  if (!handle) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (strings_.size() >= limits_.max_names && !strings_.count(handle)) return;
    bool cut = false;
    std::size_t length = text ? cut_length(text, limits_.max_range_bytes, &cut) : 0;
    strings_[handle].assign(text ? text : "", length);
  } catch (...) {  // out of memory: ranges naming it read "(registered string)"
  }
}

void GraphNodeTable::remember_locked(std::uint64_t node, Outcome outcome, std::uint64_t row) {
  Recent& recent = recent_[recent_next_];
  recent.node = node;
  recent.row = row;
  recent.outcome = outcome;
  recent_next_ = (recent_next_ + 1) % kRecent;
}

std::uint32_t GraphNodeTable::intern_kernel_locked(std::string_view name) {
  auto found = kernel_ids_.find(name);
  if (found != kernel_ids_.end()) return found->second;
  auto id = static_cast<std::uint32_t>(kernels_.size());
  kernels_.emplace_back(name);
  kernel_ids_.emplace(std::string_view(kernels_.back()), id);
  return id;
}

bool GraphNodeTable::intern_range_locked(std::string_view domain, std::string_view name, bool cut,
                                         std::uint32_t* id) {
  key_.assign(domain);
  key_ += '\0';
  key_.append(name);
  auto found = range_ids_.find(key_);
  if (found != range_ids_.end()) {
    *id = found->second;
    return true;
  }
  if (ranges_.size() >= limits_.max_ranges) return false;
  *id = static_cast<std::uint32_t>(ranges_.size());
  ranges_.push_back(key_);
  range_ids_.emplace(std::string_view(ranges_.back()), *id);
  if (cut) ++counts_.ranges_cut;
  return true;
}

std::string_view GraphNodeTable::domain_name_locked(const void* handle) const {
  if (!handle) return "";
  auto found = domains_.find(handle);
  return found == domains_.end() ? kUnknownDomain : std::string_view(found->second);
}

std::uint32_t GraphNodeTable::intern_stack_locked(RangeStack* stack) {
  if (!stack || (stack->frames().empty() && stack->overflow() == 0)) return 0;
  RangeStack::InternedMemo& memo = stack->memo;
  if (memo.table == this && memo.version == stack->version()) return memo.stack;
  std::string key;
  key.reserve(4 * (stack->frames().size() + 1));
  std::uint32_t id = 0;
  bool kept = true;
  for (const RangeStack::Frame& frame : stack->frames()) {
    std::string_view name = stack->text(frame);
    if (frame.registered) {
      auto found = strings_.find(frame.registered);
      name = found == strings_.end() ? kUnknownString : std::string_view(found->second);
    }
    if (!intern_range_locked(domain_name_locked(frame.domain), name, frame.cut, &id)) {
      kept = false;  // the range table is full
      break;
    }
    append_u32(key, id);
  }
  if (kept && stack->overflow() > 0) append_u32(key, kOverDepth);
  std::uint32_t stack_id = 0;
  if (kept) {
    auto found = stack_ids_.find(key);
    if (found != stack_ids_.end()) {
      stack_id = found->second;
    } else if (stacks_.size() >= limits_.max_stacks) {
      kept = false;
    } else {
      stack_id = static_cast<std::uint32_t>(stacks_.size());
      stacks_.push_back(std::move(key));
      stack_ids_.emplace(std::string_view(stacks_.back()), stack_id);
      if (stack->overflow() > 0) ++counts_.ranges_cut;
    }
  }
  if (!kept) ++counts_.ranges_cut;  // this node's stack is written as [] (stacks[0])
  memo.table = this;
  memo.version = stack->version();
  memo.stack = stack_id;
  return stack_id;
}

void GraphNodeTable::node_created(const CreatedNode& node, RangeStack* stack) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      if (node.kind == GraphNodeKind::kOther) {
        ++counts_.other_nodes;
        remember_locked(node.node, Outcome::kOther, 0);
        return;
      }
      if (rows_.size() >= limits_.max_nodes) {
        ++counts_.not_kept;
        remember_locked(node.node, Outcome::kNotKept, 0);
        return;
      }
      GraphNodeRow row;
      row.node = node.node;
      row.graph = node.graph;
      row.tid = node.tid;
      row.kind = node.kind;
      std::string_view kernel = node.kind == GraphNodeKind::kKernel   ? node.kernel
                                : node.kind == GraphNodeKind::kMemcpy ? "[memcpy]"
                                                                      : "[memset]";
      row.kernel = intern_kernel_locked(kernel);
      if (node.kind == GraphNodeKind::kKernel) {
        row.grid = node.grid;
        row.block = node.block;
        row.shared_bytes = node.shared_bytes;
      }
      row.stack = intern_stack_locked(stack);
      std::uint32_t& order = next_order_[node.graph];
      row.order = order;
      rows_.push_back(row);
      ++order;
      remember_locked(node.node, Outcome::kRow, rows_.size() - 1);
    } catch (...) {  // out of memory
      ++counts_.not_kept;
      remember_locked(node.node, Outcome::kNotKept, 0);
    }
  } catch (...) {
  }
}

void GraphNodeTable::node_cloned(std::uint64_t node, std::uint64_t original,
                                 GraphNodeKind kind) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t k = 1; k <= kRecent; ++k) {
      Recent& recent = recent_[(recent_next_ + kRecent - k) % kRecent];
      if (recent.outcome == Outcome::kNone || recent.node != node) continue;
      if (recent.outcome == Outcome::kRow && recent.row < rows_.size() &&
          rows_[recent.row].node == node) {
        if (recent.row + 1 == rows_.size()) {
          rows_.pop_back();
        } else {
          rows_[recent.row].dropped = true;
        }
      } else if (recent.outcome == Outcome::kNotKept && counts_.not_kept > 0) {
        --counts_.not_kept;
      } else if (recent.outcome == Outcome::kOther && counts_.other_nodes > 0) {
        --counts_.other_nodes;
      }
      recent.outcome = Outcome::kNone;
      break;
    }
    if (kind == GraphNodeKind::kOther) return;  // no kernel record names it
    if (clones_.size() >= limits_.max_clones) {
      ++counts_.clones_not_kept;
      return;
    }
    try {
      clones_.emplace_back(node, original);
    } catch (...) {
      ++counts_.clones_not_kept;
    }
  } catch (...) {
  }
}

void GraphNodeTable::node_unread(GraphNodeKind kind) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(kind == GraphNodeKind::kOther ? counts_.other_nodes : counts_.not_kept);
  } catch (...) {
  }
}

void GraphNodeTable::clone_unread(GraphNodeKind kind) noexcept {
  if (kind == GraphNodeKind::kOther) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.clones_not_kept;
  } catch (...) {
  }
}

GraphNodeSnapshot GraphNodeTable::snapshot() const {
  GraphNodeSnapshot out;
  std::lock_guard<std::mutex> lock(mutex_);
  out.rows.reserve(rows_.size());
  for (const GraphNodeRow& row : rows_) {
    if (!row.dropped) out.rows.push_back(row);
  }
  out.clones.assign(clones_.begin(), clones_.end());
  out.kernels.assign(kernels_.begin(), kernels_.end());
  out.ranges.reserve(ranges_.size());
  for (const std::string& key : ranges_) {
    std::size_t zero = key.find('\0');
    GraphRange range;
    range.domain = key.substr(0, zero);
    range.name = key.substr(zero + 1);
    out.ranges.push_back(std::move(range));
  }
  out.stacks.reserve(stacks_.size());
  for (const std::string& key : stacks_) {
    std::vector<std::uint32_t> ids;
    ids.reserve(key.size() / 4);
    for (std::size_t at = 0; at + 4 <= key.size(); at += 4) {
      std::uint32_t id = read_u32(key, at);
      if (id != kOverDepth) ids.push_back(id);
    }
    out.stacks.push_back(std::move(ids));
  }
  out.counts = counts_;
  return out;
}

// ---- JSON ---------------------------------------------------------------------------------

std::string graph_nodes_json(const GraphNodeSnapshot& snapshot) {
  std::unordered_set<std::uint64_t> clones;
  for (const auto& pair : snapshot.clones) clones.insert(pair.first);
  GraphNodeCounts counts = snapshot.counts;
  counts.kernel_nodes = counts.copy_nodes = counts.unnamed = 0;

  std::string out =
      "{\"version\": 1, \"columns\": [\"node\", \"graph\", \"order\", \"tid\", \"kernel\", "
      "\"grid_x\", \"grid_y\", \"grid_z\", \"block_x\", \"block_y\", \"block_z\", "
      "\"shared_bytes\", \"stack\"],\n\"nodes\": [";
  bool first = true;
  for (const GraphNodeRow& row : snapshot.rows) {
    if (clones.count(row.node)) continue;  // made by cloning: its original is the row
    if (row.kind == GraphNodeKind::kKernel) {
      ++counts.kernel_nodes;
      if (row.kernel < snapshot.kernels.size() && snapshot.kernels[row.kernel].empty())
        ++counts.unnamed;
    } else {
      ++counts.copy_nodes;
    }
    out += first ? "\n[" : ",\n[";
    first = false;
    out += std::to_string(row.node);
    for (std::uint64_t value :
         {std::uint64_t{row.graph}, std::uint64_t{row.order}, std::uint64_t{row.tid},
          std::uint64_t{row.kernel}, std::uint64_t{row.grid[0]}, std::uint64_t{row.grid[1]},
          std::uint64_t{row.grid[2]}, std::uint64_t{row.block[0]}, std::uint64_t{row.block[1]},
          std::uint64_t{row.block[2]}, std::uint64_t{row.shared_bytes}, std::uint64_t{row.stack}}) {
      out += ", ";
      out += std::to_string(value);
    }
    out += ']';
  }
  out += "],\n\"kernels\": [";
  for (std::size_t i = 0; i < snapshot.kernels.size(); ++i) {
    out += i ? ", \"" : "\"";
    append_json_string(out, snapshot.kernels[i]);
    out += '"';
  }
  out += "],\n\"stacks\": [";
  for (std::size_t i = 0; i < snapshot.stacks.size(); ++i) {
    out += i ? ", [" : "[";
    for (std::size_t j = 0; j < snapshot.stacks[i].size(); ++j) {
      if (j) out += ", ";
      out += std::to_string(snapshot.stacks[i][j]);
    }
    out += ']';
  }
  out += "],\n\"ranges\": [";
  for (std::size_t i = 0; i < snapshot.ranges.size(); ++i) {
    out += i ? ",\n{\"domain\": \"" : "\n{\"domain\": \"";
    append_json_string(out, snapshot.ranges[i].domain);
    out += "\", \"name\": \"";
    append_json_string(out, snapshot.ranges[i].name);
    out += "\"}";
  }
  out += "],\n\"clones\": [";
  for (std::size_t i = 0; i < snapshot.clones.size(); ++i) {
    out += i ? ", [" : "[";
    out += std::to_string(snapshot.clones[i].first);
    out += ", ";
    out += std::to_string(snapshot.clones[i].second);
    out += ']';
  }
  out += "],\n\"counts\": {";
  append_json_count(out, "kernel_nodes", counts.kernel_nodes, false);
  append_json_count(out, "copy_nodes", counts.copy_nodes);
  append_json_count(out, "other_nodes", counts.other_nodes);
  append_json_count(out, "not_kept", counts.not_kept);
  append_json_count(out, "unnamed", counts.unnamed);
  append_json_count(out, "ranges_cut", counts.ranges_cut);
  append_json_count(out, "clones_not_kept", counts.clones_not_kept);
  out += "}}";
  return out;
}

}  // namespace kprof::tracer
