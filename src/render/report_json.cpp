#include "render/report_json.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "analysis/kernel_summary.h"
#include "render/envelope.h"

namespace kprof::render {

using nlohmann::json;

json value_json(const model::MetricValue& value) {
  switch (value.kind()) {
    case model::MetricValue::Kind::kDouble:
      return value.real();
    case model::MetricValue::Kind::kUint64:
      return value.integer();
    case model::MetricValue::Kind::kString:
      break;
  }
  return value.text();
}

json optional_json(const std::optional<double>& value) {
  return value && !std::isnan(*value) ? json(*value) : json(nullptr);
}

json rules_json(const model::Kernel& kernel) {
  json rules = json::array();
  for (const model::RuleFinding& rule : kernel.rules) {
    rules.push_back({{"name", rule.rule},
                     {"section", rule.section},
                     {"type", std::string(model::rule_type_code(rule.type))},
                     {"estimated_speedup_type", rule.speedup_type},
                     {"estimated_speedup_pct", optional_json(rule.estimated_speedup)},
                     {"text", rule.message}});
  }
  return rules;
}

static json optional_json(const std::optional<std::uint64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

static json settings_json(const model::ProfilerSettings& s) {
  return {{"source", s.settings_source},
          {"sets", s.sets},
          {"sections", s.sections},
          {"metrics", s.metrics},
          {"kernel_name", s.kernel_name},
          {"kernel_name_base", s.kernel_name_base},
          {"kernel_id", s.kernel_id},
          {"launch_skip", optional_json(s.launch_skip)},
          {"launch_skip_before_match", optional_json(s.launch_skip_before_match)},
          {"launch_count", optional_json(s.launch_count)},
          {"replay_mode", s.replay_mode},
          {"clock_control", s.clock_control},
          {"cache_control", s.cache_control},
          {"target_processes", s.target_processes},
          {"nvtx", s.nvtx},
          {"profile_from_start", s.profile_from_start},
          {"disable_profiler_start_stop", s.disable_profiler_start_stop},
          {"export", s.export_path},
          {"application", s.application}};
}

// Every field of a kernel but its metrics, units and instances (the bulk, streamed by
// write_report_document).
static json kernel_fields(const model::Report& report, const model::Kernel& kernel) {
  analysis::KernelSummary summary = analysis::summarize(report, kernel);
  return {{"id", kernel.id},
          {"name", kernel.display_name()},
          {"function_name", kernel.function_name},
          {"demangled_name", kernel.demangled_name},
          {"mangled_name", kernel.mangled_name},
          {"process_id", kernel.process_id},
          {"process_name", kernel.process_name},
          {"host", kernel.host},
          {"thread_id", kernel.thread_id},
          {"context_id", kernel.context_id},
          {"stream_id", kernel.stream_id},
          {"device_id", kernel.device_id},
          {"grid", {kernel.grid.x, kernel.grid.y, kernel.grid.z}},
          {"block", {kernel.block.x, kernel.block.y, kernel.block.z}},
          {"summary",
           {{"duration_ns", optional_json(summary.duration_ns)},
            {"sm_throughput_pct", optional_json(summary.sm_throughput_pct)},
            {"memory_throughput_pct", optional_json(summary.memory_throughput_pct)},
            {"dram_throughput_pct", optional_json(summary.dram_throughput_pct)},
            {"achieved_occupancy_pct", optional_json(summary.achieved_occupancy_pct)},
            {"theoretical_occupancy_pct", optional_json(summary.theoretical_occupancy_pct)},
            {"registers_per_thread", optional_json(summary.registers_per_thread)}}},
          {"missing", summary.missing},
          {"rules", rules_json(kernel)}};
}

json kernel_json(const model::Report& report, const model::Kernel& kernel,
                 const JsonOptions& options) {
  json metrics = json::object();
  json units = json::object();
  json instances = json::object();
  for (const model::Metric& metric : kernel.metrics) {
    if (options.include_metric && !options.include_metric(metric.name)) continue;
    metrics[metric.name] = value_json(metric.value);
    if (!metric.unit.empty()) units[metric.name] = metric.unit.str();
    if (options.include_instances && !metric.instances.empty()) {
      json list = json::array();
      for (const auto& instance : metric.instances) {
        list.push_back({value_json(instance.correlation_id), value_json(instance.value)});
      }
      instances[metric.name] = std::move(list);
    }
  }
  json out = kernel_fields(report, kernel);
  out["metrics"] = std::move(metrics);
  if (!units.empty()) out["units"] = std::move(units);
  if (options.include_instances) out["instances"] = std::move(instances);
  return out;
}

json reading_notes_json(const model::Report& report) {
  json notes = json::array();
  for (const std::string* note : {&report.reading_note, &report.format_note}) {
    if (!note->empty()) notes.push_back(*note);
  }
  return notes;
}

// Every field of a report but its kernels.
static json report_fields(const model::Report& report, const JsonOptions& options) {
  const model::Session& session = report.session;
  json versions = json::object();
  for (const auto& [provider, version] : session.versions) versions[provider] = version;
  json devices = json::array();
  for (const model::Device& device : report.devices) {
    json d = {{"id", device.id},
              {"name", device.name},
              {"compute_capability", device.compute_capability()}};
    if (options.include_device_attributes) {
      json attributes = json::object();
      for (const auto& attribute : device.attributes) {
        attributes[attribute.name] = value_json(attribute.value);
      }
      d["attributes"] = std::move(attributes);
    }
    devices.push_back(std::move(d));
  }
  json processes = json::array();
  for (const model::Process& process : report.processes) {
    processes.push_back({{"id", process.id}, {"name", process.name}, {"host", process.host}});
  }
  return {
      {"reading_notes", reading_notes_json(report)},
      {"path", report.path},
      {"format", std::string(model::source_format_name(report.format))},
      {"format_version", report.format_version},
      {"session",
       {{"ncu_version", session.ncu_version},
        {"cuda_version", session.cuda_version},
        {"versions", std::move(versions)},
        {"command_line", session.command_line},
        {"creation_time",
         optional_json(session.creation_time ? std::optional<std::uint64_t>(*session.creation_time)
                                             : std::nullopt)},
        {"host_os", session.host_os},
        {"target_os", session.target_os},
        {"settings", settings_json(session.settings)}}},
      {"processes", std::move(processes)},
      {"devices", std::move(devices)},
      {"skipped_results",
       {{"range", report.skipped_range_results},
        {"cmdlist", report.skipped_cmdlist_results},
        {"graph", report.skipped_graph_results}}},
      {"kernel_count", report.kernels.size()}};
}

json report_json(const model::Report& report, const std::vector<size_t>& kernels,
                 const JsonOptions& options) {
  json kernel_list = json::array();
  for (size_t index : kernels) {
    kernel_list.push_back(kernel_json(report, report.kernels[index], options));
  }
  json out = report_fields(report, options);
  out["kernels"] = std::move(kernel_list);
  return out;
}

namespace {

// A member written by the streaming writer rather than taken from a DOM.
struct StreamedMember {
  std::string_view key;
  std::function<void(JsonWriter&)> write;
};

// Writes the object `fields` with `streamed` (sorted by key, none of them in `fields`) merged
// in, keys in the order nlohmann's std::map keeps them.
void write_merged(JsonWriter& writer, const json& fields,
                  const std::vector<StreamedMember>& streamed) {
  writer.begin_object();
  auto next = streamed.begin();
  for (const auto& [key, value] : fields.items()) {
    for (; next != streamed.end() && next->key < key; ++next) {
      writer.key(next->key);
      next->write(writer);
    }
    writer.key(key);
    writer.put_dom(value);
  }
  for (; next != streamed.end(); ++next) {
    writer.key(next->key);
    next->write(writer);
  }
  writer.end_object();
}

void write_value(JsonWriter& writer, const model::MetricValue& value) {
  switch (value.kind()) {
    case model::MetricValue::Kind::kDouble:
      writer.put_double(value.real());
      return;
    case model::MetricValue::Kind::kUint64:
      writer.put_uint(value.integer());
      return;
    case model::MetricValue::Kind::kString:
      writer.put_string(value.text());
      return;
  }
}

// The included metrics of a kernel as nlohmann's object would hold them: ordered by name, and
// for a name given twice (only in a model not built by an importer) the last value, the last
// unit given and the last instances given, as repeated assignments leave them.
struct MetricMember {
  std::string_view name;
  const model::Metric* value = nullptr;
  const model::Metric* unit = nullptr;
  const model::Metric* instances = nullptr;
};

std::vector<MetricMember> metric_members(const model::Kernel& kernel, const JsonOptions& options) {
  std::vector<const model::Metric*> included;
  included.reserve(kernel.metrics.size());
  for (const model::Metric& metric : kernel.metrics) {
    if (options.include_metric && !options.include_metric(metric.name)) continue;
    included.push_back(&metric);
  }
  auto by_name = [](const model::Metric* a, const model::Metric* b) { return a->name < b->name; };
  if (std::adjacent_find(included.begin(), included.end(),
                         [&](auto* a, auto* b) { return !by_name(a, b); }) != included.end()) {
    std::stable_sort(included.begin(), included.end(), by_name);
  }
  std::vector<MetricMember> members;
  members.reserve(included.size());
  for (const model::Metric* metric : included) {
    if (members.empty() || members.back().name != metric->name) members.push_back({metric->name});
    MetricMember& member = members.back();
    member.value = metric;
    if (!metric->unit.empty()) member.unit = metric;
    if (options.include_instances && !metric->instances.empty()) member.instances = metric;
  }
  return members;
}

void write_kernel(JsonWriter& writer, const model::Report& report, const model::Kernel& kernel,
                  const JsonOptions& options) {
  const std::vector<MetricMember> members = metric_members(kernel, options);
  std::vector<StreamedMember> streamed;
  if (options.include_instances) {
    streamed.push_back({"instances", [&](JsonWriter& w) {
                          w.begin_object();
                          for (const MetricMember& member : members) {
                            if (member.instances == nullptr) continue;
                            w.key(member.name);
                            w.begin_array();
                            for (const auto& instance : member.instances->instances) {
                              w.begin_array();
                              write_value(w, instance.correlation_id);
                              write_value(w, instance.value);
                              w.end_array();
                            }
                            w.end_array();
                          }
                          w.end_object();
                        }});
  }
  streamed.push_back({"metrics", [&](JsonWriter& w) {
                        w.begin_object();
                        for (const MetricMember& member : members) {
                          w.key(member.name);
                          write_value(w, member.value->value);
                        }
                        w.end_object();
                      }});
  if (std::any_of(members.begin(), members.end(), [](auto& m) { return m.unit != nullptr; })) {
    streamed.push_back({"units", [&](JsonWriter& w) {
                          w.begin_object();
                          for (const MetricMember& member : members) {
                            if (member.unit == nullptr) continue;
                            w.key(member.name);
                            w.put_string(member.unit->unit.str());
                          }
                          w.end_object();
                        }});
  }
  write_merged(writer, kernel_fields(report, kernel), streamed);
}

}  // namespace

void write_report(JsonWriter& writer, const model::Report& report,
                  const std::vector<size_t>& kernels, const JsonOptions& options) {
  write_merged(writer, report_fields(report, options),
               {{"kernels", [&](JsonWriter& w) {
                   w.begin_array();
                   for (size_t index : kernels) {
                     write_kernel(w, report, report.kernels[index], options);
                   }
                   w.end_array();
                 }}});
}

std::string report_document_text(const std::vector<std::string>& argv,
                                 const std::vector<model::Report>& reports,
                                 const std::vector<std::vector<size_t>>& kernels,
                                 const JsonOptions& options) {
  std::string text;
  JsonWriter writer(text);
  write_merged(writer, envelope(argv), {{"reports", [&](JsonWriter& w) {
                                           w.begin_array();
                                           for (size_t r = 0; r < reports.size(); ++r) {
                                             write_report(w, reports[r], kernels[r], options);
                                           }
                                           w.end_array();
                                         }}});
  text += '\n';
  return text;
}

std::string json_text(const json& document) {
  return document.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

json envelope(const std::vector<std::string>& argv) {
  return with_envelope("kprof.report/1", argv, json::object());
}

}  // namespace kprof::render
