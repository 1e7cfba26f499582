#include "importers/ncu_rep/ncu_rep_importer.h"

#include <fmt/format.h>
#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
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

class ReportBuilder {
 public:
  ReportBuilder(const std::string& path) : path_(path) {
    report_.path = path;
    report_.format = model::SourceFormat::kNcuRep;
  }

  void set_version(std::uint32_t version) { report_.format_version = version; }

  void add_block_header(const ncu_wire::BlockHeader& header) {
    if (header.has_string_table()) {
      for (const std::string& s : header.string_table().strings()) strings_.push_back(s);
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

  void add_kernel(const ncu_wire::KernelResult& result, size_t offset) {
    model::Kernel kernel;
    kernel.id = report_.kernels.size();
    if (have_process_) {
      kernel.process_id = current_process_.id;
      kernel.process_name = current_process_.name;
      kernel.host = current_process_.host;
    } else if (report_.session.process_id) {
      kernel.process_id = *report_.session.process_id;
    }
    kernel.thread_id = result.thread_id();
    kernel.context_id = result.context_id();
    kernel.stream_id = result.stream_id();
    kernel.mangled_name = result.mangled_name();
    kernel.function_name = result.function_name();
    kernel.demangled_name = result.demangled_name();
    kernel.grid = {result.grid().x(), result.grid().y(), result.grid().z()};
    kernel.block = {result.block().x(), result.block().y(), result.block().z()};
    kernel.metrics.reserve(static_cast<size_t>(result.metrics_size()));
    for (const ncu_wire::MetricResult& wire : result.metrics()) {
      if (wire.name_id() >= strings_.size()) {
        throw_invalid(path_, InputPosition::byte(offset),
                      fmt::format("kernel result {} names metric id {} but the string table "
                                  "holds only {} names",
                                  kernel.id, wire.name_id(), strings_.size()));
      }
      model::Metric metric;
      metric.name = strings_[wire.name_id()];
      auto value = wire.has_value() ? convert_value(wire.value()) : std::nullopt;
      if (!value) continue;  // no aggregate recorded: the metric is missing, not zero
      metric.value = std::move(*value);
      metric.instances.reserve(static_cast<size_t>(wire.instances_size()));
      for (const ncu_wire::MetricInstance& instance : wire.instances()) {
        auto instance_value = convert_value(instance.value());
        if (!instance_value) continue;
        auto correlation = convert_value(instance.correlation_id());
        metric.instances.push_back(
            {correlation.value_or(model::MetricValue::of_uint(0)), std::move(*instance_value)});
      }
      kernel.metrics.push_back(std::move(metric));
    }
    model::sort_metrics(kernel.metrics);
    if (auto device = kernel.number("launch__device_id")) {
      kernel.device_id = static_cast<std::uint32_t>(*device);
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
    report_.kernels.push_back(std::move(kernel));
  }

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
    if (wire.has_profiler_command_line()) session.command_line = wire.profiler_command_line();
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

  const std::string& path_;
  model::Report report_;
  std::vector<std::string> strings_;  // cumulative over all block headers, in file order
  model::Process current_process_;
  bool have_process_ = false;
  std::optional<ncu_wire::ProfilerSettings> stored_settings_;
};

}  // namespace

bool NcuRepImporter::recognizes(std::string_view head) const {
  return head.size() >= kMagic.size() && head.substr(0, kMagic.size()) == kMagic;
}

model::Report NcuRepImporter::parse(const std::string& path, std::string_view bytes) const {
  if (!recognizes(bytes)) {
    throw_invalid(path, InputPosition::byte(0), "not an Nsight Compute report: missing \"NVR\\0\"");
  }
  Cursor cursor(path, bytes);
  cursor.take(kMagic.size(), "the magic");
  ReportBuilder builder(path);

  size_t header_offset = cursor.offset();
  std::string_view header_bytes = cursor.take_entry("the file header");
  ncu_wire::FileHeader file_header;
  parse_or_throw(file_header, header_bytes, path, header_offset, "file header");
  if (file_header.version() != kKnownVersion) {
    throw_invalid(path, InputPosition::byte(header_offset),
                  fmt::format("report format version {} is not supported (kprof reads version "
                              "{}, written by Nsight Compute 2023.x-2025.x)",
                              file_header.version(), kKnownVersion));
  }
  builder.set_version(file_header.version());

  if (cursor.at_end()) {
    throw_invalid(path, InputPosition::byte(cursor.offset()),
                  "truncated: the report ends after its file header, before any block");
  }
  google::protobuf::Arena arena;
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
      try {
        entries.take_entry("a source entry");
      } catch (const InputError&) {
        throw_invalid(path, InputPosition::byte(at),
                      "truncated block: a source entry runs past the end of its block");
      }
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
      auto* result = google::protobuf::Arena::CreateMessage<ncu_wire::KernelResult>(&arena);
      parse_or_throw(*result, data, path, at + 4, "kernel result");
      builder.add_kernel(*result, at);
      arena.Reset();
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
  }
  return builder.finish();
}

}  // namespace kprof::importers
