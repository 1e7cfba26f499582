#include "importers/ncu_rep/ncu_rep_importer.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/redact.h"
#include "common/text.h"
#include "importers/ncu_rep/ncu_report_wire.pb.h"
#include "importers/ncu_rep/profiler_command_line.h"

namespace kprof::importers {
namespace {

constexpr std::string_view kMagic{"NVR\0", 4};
constexpr std::uint32_t kKnownVersion = 7;

// Bounds-checked reading of the length-prefixed container; every error names the byte offset.
class Cursor {
 public:
  Cursor(const std::string& path, std::string_view bytes) : path_(path), bytes_(bytes) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }
  bool at_end() const { return offset_ == bytes_.size(); }

  std::uint32_t read_u32(std::string_view what) {
    if (remaining() < 4) {
      throw_invalid(
          path_, InputPosition::byte(offset_),
          fmt::format("truncated: the file ends where the 4-byte length of {} should be", what));
    }
    const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data() + offset_);
    offset_ += 4;
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
  }

  std::string_view take(size_t size, std::string_view what) {
    if (remaining() < size) {
      throw_invalid(
          path_, InputPosition::byte(offset_),
          fmt::format("truncated: {} needs {} bytes but only {} remain", what, size, remaining()));
    }
    std::string_view slice = bytes_.substr(offset_, size);
    offset_ += size;
    return slice;
  }

  // A uint32 length followed by that many bytes.
  std::string_view take_entry(std::string_view what) {
    std::uint32_t size = read_u32(what);
    return take(size, what);
  }

 private:
  const std::string& path_;
  std::string_view bytes_;
  size_t offset_ = 0;
};

template <typename Message>
void parse_or_throw(Message& message, std::string_view data, const std::string& path, size_t offset,
                    std::string_view what) {
  if (!message.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    throw_invalid(
        path, InputPosition::byte(offset),
        fmt::format("corrupted {}: the {} bytes are not a valid message", what, data.size()));
  }
}

std::optional<model::MetricValue> convert_value(const ncu_wire::MetricValue& value) {
  if (value.has_double_value()) return model::MetricValue::of_double(value.double_value());
  if (value.has_uint64_value()) return model::MetricValue::of_uint(value.uint64_value());
  if (value.has_float_value()) return model::MetricValue::of_double(value.float_value());
  if (value.has_uint32_value()) return model::MetricValue::of_uint(value.uint32_value());
  if (value.has_string_value()) return model::MetricValue::of_string(value.string_value());
  return std::nullopt;
}

model::RuleType convert_rule_type(int type) {
  switch (type) {
    case 1:
      return model::RuleType::kOk;
    case 2:
      return model::RuleType::kWarning;
    case 3:
      return model::RuleType::kError;
    case 4:
      return model::RuleType::kOptimization;
    default:
      return model::RuleType::kNone;
  }
}

std::string speedup_type_name(int type) {
  switch (type) {
    case 1:
      return "local";
    case 2:
      return "global";
    default:
      return "";
  }
}

// Rule messages carry link markup that ncu renders when printing: "@section:ID:Text@" becomes
// "Text", "@url:Text:https://…@" becomes "Text (https://…)". Messages are kept as ncu prints them.
std::string render_rule_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t at = text.find('@', i);
    if (at == std::string_view::npos) break;
    size_t end = text.find('@', at + 1);
    std::string_view inner =
        end == std::string_view::npos ? std::string_view{} : text.substr(at + 1, end - at - 1);
    size_t first = inner.find(':');
    size_t second = first == std::string_view::npos ? first : inner.find(':', first + 1);
    std::string_view kind = inner.substr(0, first);
    if (second == std::string_view::npos || (kind != "section" && kind != "url")) {
      out.append(text.substr(i, at + 1 - i));  // a plain '@'
      i = at + 1;
      continue;
    }
    out.append(text.substr(i, at - i));
    std::string_view label = inner.substr(first + 1, second - first - 1);
    std::string_view target = inner.substr(second + 1);
    out.append(kind == "section" ? target : label);
    if (kind == "url") out.append(" (").append(target).append(")");
    i = end + 1;
  }
  out.append(text.substr(i));
  return out;
}

// One kernel result found by the container walk, with what it needs from the file before it.
struct ResultContext {
  std::string_view bytes;  // the message, without its length prefix
  size_t offset;           // of its length prefix, for messages
  model::Process process;  // id 0, no name: none recorded
};

// A kernel result naming a metric id beyond the string table. Told apart from the other decoding
// errors because the table is only whole once the container walk reached the end of the file:
// when the walk stopped early, its own error is the one to report.
class UnknownNameId : public InputError {
 public:
  using InputError::InputError;
};

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

constexpr std::uint32_t tag_of(int field, WireFormatLite::WireType type) {
  return static_cast<std::uint32_t>(field) << 3 | type;
}

// MetricValue as the wire holds it. Fields follow protobuf's rules: the last occurrence of a
// scalar wins, a repeated sub-message merges, a field with an unexpected wire type is unknown
// and skipped, so that this reads exactly what the generated parser read before.
struct WireValue {
  bool has_string = false, has_float = false, has_double = false, has_uint32 = false,
       has_uint64 = false;
  std::string string_value;
  float float_value = 0;
  double double_value = 0;
  std::uint32_t uint32_value = 0;
  std::uint64_t uint64_value = 0;

  std::optional<model::MetricValue> to_model() && {
    if (has_double) return model::MetricValue::of_double(double_value);
    if (has_uint64) return model::MetricValue::of_uint(uint64_value);
    if (has_float) return model::MetricValue::of_double(float_value);
    if (has_uint32) return model::MetricValue::of_uint(uint32_value);
    if (has_string) return model::MetricValue::of_string(std::move(string_value));
    return std::nullopt;
  }
};

// Enters a length-delimited sub-message: false when its length is malformed or runs past the
// enclosing message.
bool enter(CodedInputStream& in, CodedInputStream::Limit& limit) {
  int size = 0;
  if (!in.ReadVarintSizeAsInt(&size) || size > in.BytesUntilLimit()) return false;
  if (!in.IncrementRecursionDepth()) return false;
  limit = in.PushLimit(size);
  return true;
}

// Leaves it: false unless it ended exactly at its length (a zero tag or an end-group inside
// is malformed).
bool leave(CodedInputStream& in, CodedInputStream::Limit limit) {
  bool whole = in.ConsumedEntireMessage();
  in.DecrementRecursionDepthAndPopLimit(limit);
  return whole;
}

bool skip_sub_message(CodedInputStream& in) {
  int size = 0;
  return in.ReadVarintSizeAsInt(&size) && size <= in.BytesUntilLimit() && in.Skip(size);
}

bool read_value(CodedInputStream& in, WireValue& value) {
  CodedInputStream::Limit limit;
  if (!enter(in, limit)) return false;
  while (std::uint32_t tag = in.ReadTag()) {
    switch (tag) {
      case tag_of(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!WireFormatLite::ReadString(&in, &value.string_value)) return false;
        value.has_string = true;
        break;
      case tag_of(2, WireFormatLite::WIRETYPE_FIXED32): {
        std::uint32_t bits = 0;
        if (!in.ReadLittleEndian32(&bits)) return false;
        std::memcpy(&value.float_value, &bits, sizeof bits);
        value.has_float = true;
        break;
      }
      case tag_of(3, WireFormatLite::WIRETYPE_FIXED64): {
        std::uint64_t bits = 0;
        if (!in.ReadLittleEndian64(&bits)) return false;
        std::memcpy(&value.double_value, &bits, sizeof bits);
        value.has_double = true;
        break;
      }
      case tag_of(4, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint32(&value.uint32_value)) return false;
        value.has_uint32 = true;
        break;
      case tag_of(5, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint64(&value.uint64_value)) return false;
        value.has_uint64 = true;
        break;
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  return leave(in, limit);
}

bool read_instance(CodedInputStream& in, WireValue& correlation, WireValue& value) {
  CodedInputStream::Limit limit;
  if (!enter(in, limit)) return false;
  while (std::uint32_t tag = in.ReadTag()) {
    switch (tag) {
      case tag_of(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!read_value(in, correlation)) return false;
        break;
      case tag_of(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!read_value(in, value)) return false;
        break;
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  return leave(in, limit);
}

struct DecodedMetric {
  std::uint32_t name_id = 0;
  std::optional<model::MetricValue> value;
  std::vector<model::MetricInstance> instances;
};

// One MetricResult (without its length prefix). Instances are skipped unread unless asked for:
// they are most of a full report's bytes and only inspect shows them.
bool read_metric(std::string_view bytes, bool with_instances, DecodedMetric& metric) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  in.PushLimit(static_cast<int>(bytes.size()));
  WireValue value;
  bool has_value = false;
  while (std::uint32_t tag = in.ReadTag()) {
    switch (tag) {
      case tag_of(1, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint32(&metric.name_id)) return false;
        break;
      case tag_of(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!read_value(in, value)) return false;
        has_value = true;
        break;
      case tag_of(3, WireFormatLite::WIRETYPE_LENGTH_DELIMITED): {
        if (!with_instances) {
          if (!skip_sub_message(in)) return false;
          break;
        }
        WireValue correlation, instance_value;
        if (!read_instance(in, correlation, instance_value)) return false;
        auto converted = std::move(instance_value).to_model();
        if (!converted) break;
        metric.instances.push_back(
            {std::move(correlation).to_model().value_or(model::MetricValue::of_uint(0)),
             std::move(*converted)});
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  if (!in.ConsumedEntireMessage()) return false;
  if (has_value) metric.value = std::move(value).to_model();
  return true;
}

// One source entry (SourceData, ProfilerReportCommon.proto): 1 Reference, 4 Binary (the
// module's cubin), 5 SassLevel, 6 CudaSmVersion, 9 RelocationData {1 Functions: repeated
// RelocationSymbolEntry {1 SymbolName, 2 Address, 3 SymbolIndex}}; Code, Intermediate and
// SourceFiles (2, 3, 8) were absent from every report seen and are skipped. The cubin is a view
// into the entry (megabytes: no copy for a parser), its offset in the entry kept for messages.
struct WireSource {
  std::uint64_t reference = 0;
  std::string_view binary;
  size_t binary_at = 0;
  bool has_binary = false;
  std::uint32_t sass_level = 0;
  std::uint32_t sm_version = 0;
  std::vector<model::ModuleFunction> functions;
};

bool read_relocation_entry(CodedInputStream& in, model::ModuleFunction& function) {
  CodedInputStream::Limit limit;
  if (!enter(in, limit)) return false;
  while (std::uint32_t tag = in.ReadTag()) {
    switch (tag) {
      case tag_of(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!WireFormatLite::ReadString(&in, &function.name)) return false;
        break;
      case tag_of(2, WireFormatLite::WIRETYPE_VARINT): {
        std::uint64_t address = 0;
        if (!in.ReadVarint64(&address)) return false;
        function.address = address;
        break;
      }
      case tag_of(3, WireFormatLite::WIRETYPE_VARINT): {
        std::uint32_t index = 0;
        if (!in.ReadVarint32(&index)) return false;
        function.symbol_index = index;
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  return leave(in, limit);
}

bool read_relocations(CodedInputStream& in, std::vector<model::ModuleFunction>& functions) {
  CodedInputStream::Limit limit;
  if (!enter(in, limit)) return false;
  while (std::uint32_t tag = in.ReadTag()) {
    if (tag == tag_of(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      model::ModuleFunction function;
      if (!read_relocation_entry(in, function)) return false;
      functions.push_back(std::move(function));
    } else if (!WireFormatLite::SkipField(&in, tag)) {  // 2 Objects: empty in every report seen
      return false;
    }
  }
  return leave(in, limit);
}

bool read_source_entry(std::string_view bytes, WireSource& source) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  in.PushLimit(static_cast<int>(bytes.size()));
  while (std::uint32_t tag = in.ReadTag()) {
    switch (tag) {
      case tag_of(1, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint64(&source.reference)) return false;
        break;
      case tag_of(4, WireFormatLite::WIRETYPE_LENGTH_DELIMITED): {
        int size = 0;
        if (!in.ReadVarintSizeAsInt(&size) || size > in.BytesUntilLimit()) return false;
        source.binary_at = static_cast<size_t>(in.CurrentPosition());
        source.binary = bytes.substr(source.binary_at, static_cast<size_t>(size));
        source.has_binary = true;
        if (!in.Skip(size)) return false;
        break;
      }
      case tag_of(5, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint32(&source.sass_level)) return false;
        break;
      case tag_of(6, WireFormatLite::WIRETYPE_VARINT):
        if (!in.ReadVarint32(&source.sm_version)) return false;
        break;
      case tag_of(9, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        if (!read_relocations(in, source.functions)) return false;
        break;
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  return in.ConsumedEntireMessage();
}

bool is_declared_in_kernel_result(int field) {
  switch (field) {
    case 1:
    case 2:
    case 4:
    case 5:
    case 6:
    case 7:
    case 10:
    case 11:
    case 14:
    case 15:
    case 19:
    case 20:
    case 22:
    case 23:
    case 26:
    case 27:
    case 31:
      return true;
    default:
      return false;
  }
}

// Splits a KernelResult into its metrics (field 13, decoded here without allocations per field)
// and the other declared fields, copied for the generated parser (names, grid, rules: a few KB).
// Undeclared fields (section bodies) are skipped as protobuf would skip them.
bool split_kernel_result(std::string_view bytes, std::string& rest,
                         std::vector<std::string_view>& metrics) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  in.PushLimit(static_cast<int>(bytes.size()));
  for (;;) {
    int start = in.CurrentPosition();
    std::uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    if (tag == tag_of(13, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      int size = 0;
      if (!in.ReadVarintSizeAsInt(&size) || size > in.BytesUntilLimit()) return false;
      metrics.push_back(
          bytes.substr(static_cast<size_t>(in.CurrentPosition()), static_cast<size_t>(size)));
      in.Skip(size);
      continue;
    }
    if (!WireFormatLite::SkipField(&in, tag)) return false;
    if (is_declared_in_kernel_result(field)) {
      rest.append(bytes.substr(static_cast<size_t>(start),
                               static_cast<size_t>(in.CurrentPosition() - start)));
    }
  }
  return in.ConsumedEntireMessage();
}

[[noreturn]] void throw_corrupted_result(const std::string& path, const ResultContext& context) {
  throw_invalid(path, InputPosition::byte(context.offset + 4),
                fmt::format("corrupted kernel result: the {} bytes are not a valid message",
                            context.bytes.size()));
}

// One kernel result into the model. Pure over its inputs, so results decode in parallel.
model::Kernel decode_kernel(const std::string& path, const ResultContext& context, size_t index,
                            const std::vector<model::MetricName>& strings,
                            const ImportOptions& options) {
  std::string rest;
  std::vector<std::string_view> metric_bytes;
  if (!split_kernel_result(context.bytes, rest, metric_bytes)) {
    throw_corrupted_result(path, context);
  }
  ncu_wire::KernelResult result;
  if (!result.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) {
    throw_corrupted_result(path, context);
  }
  model::Kernel kernel;
  kernel.id = index;
  kernel.process_id = context.process.id;
  kernel.process_name = context.process.name;
  kernel.host = context.process.host;
  kernel.thread_id = result.thread_id();
  kernel.context_id = result.context_id();
  kernel.stream_id = result.stream_id();
  kernel.mangled_name = result.mangled_name();
  kernel.function_name = result.function_name();
  kernel.demangled_name = result.demangled_name();
  kernel.grid = {result.grid().x(), result.grid().y(), result.grid().z()};
  kernel.block = {result.block().x(), result.block().y(), result.block().z()};
  if (result.has_source() && result.source().has_reference()) {
    kernel.source_reference = result.source().reference();
  }
  kernel.metrics.reserve(metric_bytes.size());
  // A malformed message anywhere in the result is reported before a metric naming a string
  // that does not exist, as when the whole result was parsed first.
  std::optional<std::uint32_t> unknown_name_id;
  for (std::string_view bytes : metric_bytes) {
    DecodedMetric decoded;
    if (!read_metric(bytes, options.instances, decoded)) throw_corrupted_result(path, context);
    // An id indexes the string tables of every block header concatenated in file order,
    // including those of blocks after this result: an ncu 2023.3 report of an H800 (public,
    // flyinglandlord/sglang @ 16ab0c9, profile.ncu-rep) has its first result name ids 967-969,
    // which three later block headers add one each. So the whole table counts, not the part
    // read before the result.
    if (decoded.name_id >= strings.size()) {
      if (!unknown_name_id) unknown_name_id = decoded.name_id;
      continue;
    }
    if (!decoded.value) continue;  // no aggregate recorded: the metric is missing, not zero
    if (!options.instances && options.instances_of &&
        options.instances_of(strings[decoded.name_id].str())) {
      // Read again with its instances: a few metrics of thousands, so the others are spared.
      decoded = DecodedMetric{};
      if (!read_metric(bytes, true, decoded)) throw_corrupted_result(path, context);
    }
    model::Metric metric;
    metric.name = strings[decoded.name_id];
    metric.value = std::move(*decoded.value);
    metric.instances = std::move(decoded.instances);
    kernel.metrics.push_back(std::move(metric));
  }
  if (unknown_name_id) {
    throw UnknownNameId(ExitCode::kInputInvalid, path, InputPosition::byte(context.offset),
                        fmt::format("kernel result {} names metric id {} but the string tables "
                                    "of the report's block headers hold only {} names",
                                    index, *unknown_name_id, strings.size()));
  }
  model::sort_metrics(kernel.metrics);
  if (auto device = kernel.number("launch__device_id")) {
    // A damaged report's device id that is no 32-bit whole number is left as device 0.
    if (auto id = whole_number<std::uint32_t>(*device)) kernel.device_id = *id;
  }
  for (const ncu_wire::RuleResult& rule : result.rules()) {
    for (const ncu_wire::RuleBodyItem& item : rule.body().items()) {
      if (!item.has_message()) continue;
      model::RuleFinding finding;
      finding.rule = rule.identifier();
      finding.section = rule.section_identifier();
      finding.type = convert_rule_type(item.message().type());
      finding.message = render_rule_markup(item.message().text());
      if (item.has_speedup() && item.speedup().has_value()) {
        finding.speedup_type = speedup_type_name(item.speedup().type());
        finding.estimated_speedup = item.speedup().value();
      }
      kernel.rules.push_back(std::move(finding));
    }
  }
  return kernel;
}

// Runs task(0) … task(count - 1) on up to `threads` threads (0: one per hardware thread).
template <typename Task>
void run_tasks(size_t count, unsigned threads, const Task& task) {
  size_t workers = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, count);
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::jthread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) task(i);
    });
  }
}

class ReportBuilder {
 public:
  explicit ReportBuilder(const std::string& path) {
    report_.path = path;
    report_.format = model::SourceFormat::kNcuRep;
  }

  void set_version(std::uint32_t version) { report_.format_version = version; }

  void add_block_header(const ncu_wire::BlockHeader& header) {
    if (header.has_string_table()) {
      for (const std::string& s : header.string_table().strings()) {
        strings_.push_back(names_.intern(s));
      }
    }
    if (header.has_session()) merge_session(header.session());
    if (header.has_process()) {
      current_process_ =
          model::Process{header.process().process_id(), header.process().process_name(),
                         header.process().hostname()};
      have_process_ = true;
      remember_process(current_process_);
    }
  }

  // Where the next kernel result's context comes from: the process of the latest block header
  // (else the session's).
  ResultContext context_for(std::string_view bytes, size_t offset) const {
    ResultContext context{bytes, offset, {}};
    if (have_process_) {
      context.process = current_process_;
    } else if (report_.session.process_id) {
      context.process.id = *report_.session.process_id;
    }
    return context;
  }

  void add_kernel(model::Kernel kernel) { report_.kernels.push_back(std::move(kernel)); }

  // A module's source entry, merged by reference: a module recurs in later blocks without its
  // cubin, listing the functions loaded since (some entries name a function not loaded yet, with
  // no address). The first cubin is kept; a function takes its first recorded address.
  void add_source(const WireSource& source, size_t entry_offset) {
    model::SourceModule& module = modules_[source.reference];
    module.reference = source.reference;
    if (source.has_binary && module.binary.empty()) {
      module.binary.assign(source.binary);
      module.binary_offset = entry_offset + source.binary_at;
    }
    if (source.sm_version != 0) module.sm_version = source.sm_version;
    if (source.sass_level != 0) module.sass_level = source.sass_level;
    for (const model::ModuleFunction& function : source.functions) {
      auto known =
          std::find_if(module.functions.begin(), module.functions.end(),
                       [&](const model::ModuleFunction& f) { return f.name == function.name; });
      if (known == module.functions.end()) {
        module.functions.push_back(function);
        continue;
      }
      if (!known->address) known->address = function.address;
      if (!known->symbol_index) known->symbol_index = function.symbol_index;
    }
  }

  void keep_modules() { report_.modules_read = true; }

  const std::vector<model::MetricName>& strings() const { return strings_; }

  model::Report finish() {
    // ncu numbers results grouped by process, lower process ids first (seen in a two-process
    // report: its CSV export lists pid 516's kernel as ID 0 although pid 518's comes first in
    // the file); follow it so that ids match `ncu --import` output.
    std::stable_sort(
        report_.kernels.begin(), report_.kernels.end(),
        [](const model::Kernel& a, const model::Kernel& b) { return a.process_id < b.process_id; });
    for (size_t i = 0; i < report_.kernels.size(); ++i) report_.kernels[i].id = i;
    model::ProfilerSettings from_line = settings_from_command_line(report_.session.command_line);
    if (stored_settings_) {
      apply_stored_settings(*stored_settings_, from_line);
    }
    report_.session.settings = std::move(from_line);
    std::sort(report_.devices.begin(), report_.devices.end(),
              [](const model::Device& a, const model::Device& b) { return a.id < b.id; });
    for (auto& [reference, module] : modules_) report_.modules.push_back(std::move(module));
    return std::move(report_);
  }

  model::Report& report() { return report_; }

 private:
  void remember_process(const model::Process& process) {
    for (const model::Process& known : report_.processes) {
      if (known.id == process.id) return;
    }
    report_.processes.push_back(process);
  }

  void merge_session(const ncu_wire::SessionDetails& wire) {
    model::Session& session = report_.session;
    if (wire.has_process_id()) session.process_id = wire.process_id();
    if (wire.has_creation_time()) session.creation_time = wire.creation_time();
    if (wire.has_host_system()) session.host_os = describe_system(wire.host_system());
    if (wire.has_target_system()) {
      session.target_os = describe_system(wire.target_system());
      session.target_cpu = wire.target_system().processor();
    }
    if (wire.has_comments()) session.comments = wire.comments();
    for (const ncu_wire::VersionInfo& version : wire.versions()) {
      session.versions.emplace_back(version.provider(), version.version());
      if (version.provider() == "CUDA Version") session.cuda_version = version.version();
      if (version.provider().rfind("Nsight Compute", 0) == 0 &&
          (session.ncu_version.empty() || version.provider() == "Nsight Compute")) {
        session.ncu_version = version.version();
      }
    }
    // The program's own arguments follow ncu's: a server's --api-key is kept out of every output.
    if (wire.has_profiler_command_line()) {
      session.command_line = redact_secrets(wire.profiler_command_line());
    }
    if (wire.has_profiler_settings()) stored_settings_ = wire.profiler_settings();
    for (const ncu_wire::DeviceAttributes& wire_device : wire.devices()) {
      model::Device device;
      device.id = wire_device.id();
      device.name = wire_device.name();
      for (const ncu_wire::DeviceAttribute& attribute : wire_device.attributes()) {
        auto value = convert_value(attribute.value());
        if (!value) continue;
        model::Metric metric;
        metric.name = attribute.name();
        metric.value = std::move(*value);
        device.attributes.push_back(std::move(metric));
      }
      model::sort_metrics(device.attributes);
      auto existing = std::find_if(report_.devices.begin(), report_.devices.end(),
                                   [&](const model::Device& d) { return d.id == device.id; });
      if (existing == report_.devices.end()) {
        report_.devices.push_back(std::move(device));
      } else {
        *existing = std::move(device);
      }
    }
  }

  static std::string describe_system(const ncu_wire::SystemInfo& system) {
    std::string text = system.os_name();
    if (!system.architecture().empty()) text += fmt::format(" ({})", system.architecture());
    return text;
  }

  void apply_stored_settings(const ncu_wire::ProfilerSettings& stored,
                             model::ProfilerSettings& settings) {
    settings.settings_source =
        settings.settings_source.empty() ? "report" : "report and command line";
    if (stored.has_clock_control()) settings.clock_control = stored.clock_control();
    if (stored.has_replay_mode()) settings.replay_mode = stored.replay_mode();
    if (stored.has_enable_nvtx()) settings.nvtx = stored.enable_nvtx() ? "on" : "off";
    if (stored.has_disable_profiler_start_stop()) {
      settings.disable_profiler_start_stop = stored.disable_profiler_start_stop();
    }
    if (stored.has_profile_from_start()) {
      settings.profile_from_start = stored.profile_from_start() ? "on" : "off";
    }
    if (stored.has_enabled_sections() && settings.sections.empty()) {
      settings.sections.push_back(stored.enabled_sections());
    }
    if (stored.has_other() && stored.other().has_metrics() && settings.metrics.empty()) {
      settings.metrics.push_back(stored.other().metrics());
    }
    if (stored.has_filter()) {
      const auto& filter = stored.filter();
      if (filter.has_kernel_name()) settings.kernel_name = filter.kernel_name();
      if (filter.has_kernel_name_base()) settings.kernel_name_base = filter.kernel_name_base();
      if (filter.has_kernel_id()) settings.kernel_id = filter.kernel_id();
      if (filter.has_launch_skip()) settings.launch_skip = filter.launch_skip();
      if (filter.has_launch_skip_before_match()) {
        settings.launch_skip_before_match = filter.launch_skip_before_match();
      }
      if (filter.has_launch_count()) settings.launch_count = filter.launch_count();
    }
  }

  model::Report report_;
  // Cumulative over all block headers, in file order; interned, as each block header repeats
  // the names of the metrics after it.
  std::vector<model::MetricName> strings_;
  model::NameInterner names_;
  model::Process current_process_;
  bool have_process_ = false;
  std::optional<ncu_wire::ProfilerSettings> stored_settings_;
  std::map<std::uint64_t, model::SourceModule> modules_;  // by reference, as the model holds them
};

// The blocks after the file header: block headers into the builder, kernel results located
// (not decoded) in `results`, other entries checked and counted. Each block is handed to
// `done_with` once walked: what the walk touched of it (length prefixes, the header) is not
// needed again until its results are decoded.
void walk_container(const std::string& path, std::string_view bytes, Cursor& cursor,
                    ReportBuilder& builder, std::vector<ResultContext>& results,
                    const ImportOptions& options) {
  const std::function<void(std::string_view)>& done_with = options.done_with;
  while (!cursor.at_end()) {
    size_t block_offset = cursor.offset();
    std::string_view block_bytes = cursor.take_entry("a block header");
    ncu_wire::BlockHeader header;
    parse_or_throw(header, block_bytes, path, block_offset, "block header");
    builder.add_block_header(header);

    size_t payload_offset = cursor.offset();
    std::string_view payload = cursor.take(header.payload_size(), "a block payload");
    Cursor entries(path, payload);
    auto entry_offset = [&] { return payload_offset + entries.offset(); };
    for (std::uint32_t i = 0; i < header.num_sources(); ++i) {
      size_t at = entry_offset();
      std::string_view entry;
      try {
        entry = entries.take_entry("a source entry");
      } catch (const InputError&) {
        throw_invalid(path, InputPosition::byte(at),
                      "truncated block: a source entry runs past the end of its block");
      }
      if (!options.sources) continue;  // a module's cubin: only `kprof source` reads it
      WireSource source;
      if (!read_source_entry(entry, source)) {
        throw_invalid(path, InputPosition::byte(at + 4),
                      fmt::format("corrupted source entry: the {} bytes are not a valid message",
                                  entry.size()));
      }
      builder.add_source(source, at + 4);
    }
    for (std::uint32_t i = 0; i < header.num_results(); ++i) {
      size_t at = entry_offset();
      std::string_view data;
      try {
        data = entries.take_entry("a kernel result");
      } catch (const InputError&) {
        throw_invalid(path, InputPosition::byte(at),
                      "truncated block: a kernel result runs past the end of its block");
      }
      results.push_back(builder.context_for(data, at));
    }
    struct Skipped {
      std::uint32_t count;
      size_t* counter;
      std::string_view what;
    };
    model::Report& report = builder.report();
    for (const Skipped& skipped :
         {Skipped{header.num_range_results(), &report.skipped_range_results, "a range result"},
          Skipped{header.num_cmdlist_results(), &report.skipped_cmdlist_results,
                  "a command-list result"},
          Skipped{header.num_graph_results(), &report.skipped_graph_results,
                  "a CUDA-graph result"}}) {
      for (std::uint32_t i = 0; i < skipped.count; ++i) {
        size_t at = entry_offset();
        try {
          entries.take_entry(skipped.what);
        } catch (const InputError&) {
          throw_invalid(
              path, InputPosition::byte(at),
              fmt::format("truncated block: {} runs past the end of its block", skipped.what));
        }
        ++*skipped.counter;
      }
    }
    if (!entries.at_end()) {
      throw_invalid(path, InputPosition::byte(entry_offset()),
                    fmt::format("corrupted block: {} bytes after its last entry are not accounted "
                                "for by its header",
                                entries.remaining()));
    }
    if (done_with) done_with(bytes.substr(block_offset, cursor.offset() - block_offset));
  }
}

// Hands the input to `done_with` up to the first kernel result not yet decoded, as results
// finish in any order on any thread: the file's pages are given back behind the decoding front,
// sources and headers between results included.
class DecodedFront {
 public:
  DecodedFront(std::string_view bytes, const std::vector<ResultContext>& results,
               const std::function<void(std::string_view)>& done_with)
      : bytes_(bytes), results_(results), done_with_(done_with), done_(results.size(), false) {}

  void finished(size_t index) {
    if (!done_with_) return;
    std::lock_guard guard(lock_);
    done_[index] = true;
    while (next_ < done_.size() && done_[next_]) ++next_;
    size_t end = next_ < results_.size() ? results_[next_].offset : bytes_.size();
    if (end > released_) {
      done_with_(bytes_.substr(released_, end - released_));
      released_ = end;
    }
  }

 private:
  std::string_view bytes_;
  const std::vector<ResultContext>& results_;
  const std::function<void(std::string_view)>& done_with_;
  std::mutex lock_;
  std::vector<bool> done_;
  size_t next_ = 0;
  size_t released_ = 0;
};

// What a report of a format version kprof does not know left out, for its one warning line.
std::string unknown_version_note(std::uint32_t version, const std::string& written_by,
                                 size_t undecoded, const std::string& rest_skipped) {
  std::string note = fmt::format(
      "report format version {}{} is {} the version {} kprof knows (Nsight Compute 2023.x to "
      "2025.3.x): read with version {}'s schema, the fields it does not know ignored",
      version, written_by.empty() ? "" : " (written by Nsight Compute " + written_by + ")",
      version > kKnownVersion ? "newer than" : "older than", kKnownVersion, kKnownVersion);
  if (undecoded != 0) {
    note += fmt::format(", {} kernel result{} that did not decode skipped", undecoded,
                        undecoded == 1 ? "" : "s");
  }
  if (!rest_skipped.empty()) note += ", " + rest_skipped;
  return note;
}

}  // namespace

bool NcuRepImporter::recognizes(std::string_view head) const {
  return head.size() >= kMagic.size() && head.substr(0, kMagic.size()) == kMagic;
}

model::Report NcuRepImporter::parse(const std::string& path, std::string_view bytes,
                                    const ImportOptions& options) const {
  if (!recognizes(bytes)) {
    throw_invalid(path, InputPosition::byte(0), "not an Nsight Compute report: missing \"NVR\\0\"");
  }
  Cursor head(path, bytes);
  head.take(kMagic.size(), "the magic");
  ReportBuilder builder(path);

  size_t header_offset = head.offset();
  std::string_view header_bytes = head.take_entry("the file header");
  ncu_wire::FileHeader file_header;
  parse_or_throw(file_header, header_bytes, path, header_offset, "file header");
  // A version kprof does not know is read with version 7's schema as far as it goes (issue 30:
  // a newer ncu must not leave the user with nothing): protobuf skips the fields it does not
  // declare, a kernel result that does not decode is skipped and counted, and the first block
  // the container walk cannot read ends the walk; the report's format_note says all of it.
  // A known version keeps every error an error.
  const bool known = file_header.version() == kKnownVersion;
  builder.set_version(file_header.version());
  if (options.sources) builder.keep_modules();

  // .ncu-repz (ncu 2025.4+). NVIDIA documents "a new ncu-repz file format for zstd compressed
  // report files" (https://docs.nvidia.com/nsight-compute/ReleaseNotes/topics/updates-2025-4.html)
  // and no byte framing. kprof infers two and reads both, told apart by content, never by name:
  // (1) the whole .ncu-rep in zstd frames — common/file_bytes decompresses that before any
  // importer sees it (the zstd magic 28 b5 2f fd first); (2) the magic and file header plain,
  // the blocks after them in zstd frames (one or several, concatenated) — decompressed here.
  // Both are tested on fixtures made by compressing real 2025.3.1 reports of data/h200 that way
  // (tests/importers/ncu_repz_test.cpp); no 2025.4 report was available to check either against.
  // Offsets in later errors are in the decompressed report.
  const size_t body = head.offset();
  std::string decompressed;
  if (has_zstd_magic(bytes.substr(body))) {
    decompressed.reserve(body);
    decompressed.append(bytes.substr(0, body));
    decompressed += zstd_decompress(path, bytes.substr(body));
    bytes = decompressed;
  }
  Cursor cursor(path, bytes);
  cursor.take(body, "the file header");

  if (cursor.at_end()) {
    throw_invalid(path, InputPosition::byte(cursor.offset()),
                  "truncated: the report ends after its file header, before any block");
  }
  // First the container, serially (block headers carry the string table and the process the
  // results after them refer to), then the kernel results, independent of each other, in
  // parallel. A container error is held back until the results before it are decoded, so that
  // the first error in file order is the one reported, as a reader going front to back would.
  std::vector<ResultContext> results;
  std::exception_ptr container_error;
  std::string rest_skipped;  // what the note says of a walk that stopped
  try {
    walk_container(path, bytes, cursor, builder, results, options);
  } catch (const InputError& error) {
    container_error = std::current_exception();
    rest_skipped =
        fmt::format("the rest from {} skipped ({})", error.position().describe(), error.message());
  }
  std::vector<model::Kernel> kernels(results.size());
  std::vector<std::exception_ptr> errors(results.size());
  DecodedFront front(bytes, results, options.done_with);
  run_tasks(results.size(), options.threads, [&](size_t i) {
    try {
      kernels[i] = decode_kernel(path, results[i], i, builder.strings(), options);
    } catch (...) {
      errors[i] = std::current_exception();
    }
    if (options.done_with) options.done_with(results[i].bytes);
    front.finished(i);
  });
  size_t undecoded = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    if (known) {
      // A name beyond a table the walk could not finish reading is the walk's error.
      if (container_error) {
        try {
          std::rethrow_exception(errors[i]);
        } catch (const UnknownNameId&) {
          std::rethrow_exception(container_error);
        } catch (...) {
        }
      }
      std::rethrow_exception(errors[i]);
    }
    ++undecoded;
  }
  if (container_error && known) std::rethrow_exception(container_error);
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!errors[i]) builder.add_kernel(std::move(kernels[i]));
  }
  model::Report report = builder.finish();
  if (!known) {
    // The session's tool versions decode with the known schema too: the ncu that wrote it.
    report.format_note = unknown_version_note(file_header.version(), report.session.ncu_version,
                                              undecoded, rest_skipped);
  }
  return report;
}

}  // namespace kprof::importers
