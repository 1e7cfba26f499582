#include "render/report_json.h"

#include <cmath>

#include "analysis/kernel_summary.h"

namespace kprof::render {

using nlohmann::json;

json value_json(const model::MetricValue& value) {
  switch (value.kind) {
    case model::MetricValue::Kind::kDouble:
      return value.real;
    case model::MetricValue::Kind::kUint64:
      return value.integer;
    case model::MetricValue::Kind::kString:
      break;
  }
  return value.text;
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

json kernel_json(const model::Report& report, const model::Kernel& kernel,
                 const JsonOptions& options) {
  analysis::KernelSummary summary = analysis::summarize(report, kernel);
  json metrics = json::object();
  json units = json::object();
  json instances = json::object();
  for (const model::Metric& metric : kernel.metrics) {
    if (options.include_metric && !options.include_metric(metric.name)) continue;
    metrics[metric.name] = value_json(metric.value);
    if (!metric.unit.empty()) units[metric.name] = metric.unit;
    if (options.include_instances && !metric.instances.empty()) {
      json list = json::array();
      for (const auto& instance : metric.instances) {
        list.push_back({value_json(instance.correlation_id), value_json(instance.value)});
      }
      instances[metric.name] = std::move(list);
    }
  }
  json out = {{"id", kernel.id},
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
              {"rules", rules_json(kernel)},
              {"metrics", std::move(metrics)}};
  if (!units.empty()) out["units"] = std::move(units);
  if (options.include_instances) out["instances"] = std::move(instances);
  return out;
}

json report_json(const model::Report& report, const std::vector<size_t>& kernels,
                 const JsonOptions& options) {
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
  json kernel_list = json::array();
  for (size_t index : kernels) {
    kernel_list.push_back(kernel_json(report, report.kernels[index], options));
  }
  return {
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
      {"kernel_count", report.kernels.size()},
      {"kernels", std::move(kernel_list)}};
}

std::string json_text(const json& document) {
  return document.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

json envelope(const std::vector<std::string>& argv) {
  return {{"schema", "kprof.report/1"},
          {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", argv}}}};
}

}  // namespace kprof::render
