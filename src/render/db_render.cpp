#include "render/db_render.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "common/utf8.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

std::string db_cell(const std::optional<double>& value) {
  return value ? format_number(*value) : "—";
}

// The store hands out valid UTF-8; should anything slip through, a replacement character is
// better than a query that fails for good.
std::string dump(const nlohmann::json& document) {
  return document.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string import_text(const std::vector<model::Report>& reports,
                        const std::vector<store::ImportedRun>& runs, const std::string& db_path,
                        std::int64_t total_runs, std::int64_t total_kernels) {
  std::string out;
  for (size_t i = 0; i < reports.size(); ++i) {
    out += fmt::format("{}: {} {} ({} kernels)\n", reports[i].path,
                       runs[i].added ? "run" : "already imported as run", runs[i].run_id,
                       reports[i].kernels.size());
  }
  out += fmt::format("{}: {} runs, {} kernels\n", db_path, total_runs, total_kernels);
  return out;
}

std::string sync_text(const store::SyncCounts& counts, const std::string& source,
                      const std::string& target) {
  return fmt::format(
      "{} -> {}: runs {} added, {} skipped; hardware facts {} added, {} skipped; measured "
      "ceilings {} added, {} skipped; prediction outcomes {} added, {} skipped\n",
      source, target, counts.runs_added, counts.runs_skipped, counts.facts_added,
      counts.facts_skipped, counts.ceilings_added, counts.ceilings_skipped,
      counts.predictions_added, counts.predictions_skipped);
}

std::string history_text(const std::vector<store::KernelHistoryRow>& rows) {
  TextTable table({{"kernel"},
                   {"run", TextTable::Align::kRight},
                   {"imported"},
                   {"campaign"},
                   {"model"},
                   {"gpu"},
                   {"us", TextTable::Align::kRight},
                   {"verdict"},
                   {"bound by"}});
  for (const auto& r : rows) {
    table.add_row({ellipsize(r.name, 60), std::to_string(r.run_id), r.imported_at, r.campaign,
                   r.model, r.gpu, db_cell(r.duration_us), r.roofline, r.bound_by});
  }
  return table.to_string();
}

std::string history_json_text(const std::vector<store::KernelHistoryRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    list.push_back({{"run", r.run_id},
                    {"imported_at", r.imported_at},
                    {"campaign", r.campaign},
                    {"cell", r.cell},
                    {"model", r.model},
                    {"gpu", r.gpu},
                    {"kernel", r.name},
                    {"duration_us", optional_json(r.duration_us)},
                    {"roofline", r.roofline},
                    {"bound_by", r.bound_by},
                    {"sm_throughput_pct", optional_json(r.sm_pct)},
                    {"memory_throughput_pct", optional_json(r.memory_pct)}});
  }
  return dump(list);
}

std::string worst_text(const std::vector<store::WorstRow>& rows, const std::string& by) {
  TextTable table({{by},
                   {"kernel"},
                   {"us", TextTable::Align::kRight},
                   {"verdict"},
                   {"run", TextTable::Align::kRight}});
  for (const auto& r : rows) {
    table.add_row({r.group.empty() ? "—" : r.group, ellipsize(r.name, 60), db_cell(r.duration_us),
                   r.roofline, std::to_string(r.run_id)});
  }
  return table.to_string();
}

std::string worst_json_text(const std::vector<store::WorstRow>& rows, const std::string& by) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    list.push_back({{by, r.group},
                    {"kernel", r.name},
                    {"duration_us", optional_json(r.duration_us)},
                    {"roofline", r.roofline},
                    {"run", r.run_id}});
  }
  return dump(list);
}

std::string facts_text(const std::vector<store::FactRow>& rows) {
  TextTable table({{"gpu"}, {"fact"}, {"value", TextTable::Align::kRight}, {"unit"}, {"source"}});
  for (const auto& r : rows) table.add_row({r.gpu, r.fact, r.value, r.unit, r.source});
  return table.to_string();
}

std::string facts_json_text(const std::vector<store::FactRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    list.push_back({{"gpu", r.gpu},
                    {"fact", r.fact},
                    {"value", r.value},
                    {"unit", r.unit},
                    {"source", r.source}});
  }
  return dump(list);
}

std::string predictions_text(const std::vector<store::PredictionOutcomeRow>& rows) {
  TextTable table({{"checked"},
                   {"kernel"},
                   {"grid / block"},
                   {"predicted µs/step", TextTable::Align::kRight},
                   {"realised µs/step", TextTable::Align::kRight},
                   {"of predicted", TextTable::Align::kRight},
                   {"before → after"},
                   {""}});
  for (const auto& r : rows) {
    bool share = r.predicted_us_per_step && *r.predicted_us_per_step > 0;
    table.add_row(
        {r.checked_at, escape_for_terminal(r.kernel),
         r.grid.empty() ? "" : escape_for_terminal(r.grid + " / " + r.block),
         r.predicted_us_per_step ? format_number(*r.predicted_us_per_step) : "—",
         format_number(r.realised_us_per_step),
         share ? fmt::format("{:.0f}%", r.realised_us_per_step / *r.predicted_us_per_step * 100)
               : "—",
         escape_for_terminal(r.before_trace + " → " + r.after_trace),
         r.improved_step_did_not
             ? (r.kernel == "(step)" ? "kernels faster, step not" : "kernel faster, step not")
             : ""});
  }
  return table.to_string();
}

std::string predictions_json_text(const std::vector<store::PredictionOutcomeRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    list.push_back(
        {{"checked_at", r.checked_at},
         {"prediction", r.prediction},
         {"before_trace", r.before_trace},
         {"after_trace", r.after_trace},
         {"kernel", r.kernel},
         {"grid", r.grid},
         {"block", r.block},
         {"bound_by", r.bound_by},
         {"predicted_us_per_step",
          r.predicted_us_per_step ? nlohmann::json(*r.predicted_us_per_step) : nlohmann::json()},
         {"before_us_per_step", r.before_us_per_step},
         {"after_us_per_step", r.after_us_per_step},
         {"realised_us_per_step", r.realised_us_per_step},
         {"improved_step_did_not", r.improved_step_did_not}});
  }
  return dump(list);
}

}  // namespace kprof::render
