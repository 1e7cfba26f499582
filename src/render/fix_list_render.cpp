#include "render/fix_list_render.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "common/utf8.h"
#include "render/table.h"
#include "render/verdict_columns.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string dims(const model::Dim3& d) { return fmt::format("{},{},{}", d.x, d.y, d.z); }

std::string fix_ms(double us) { return format_number(us / 1000); }

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

// "memory-bound ×12, latency-bound ×4": the classes a group's launches got.
std::string verdict_spread(const timeline::FixGroup& g) {
  std::string text;
  for (const auto& [name, count] : g.verdicts) {
    if (!text.empty()) text += ", ";
    text += g.verdicts.size() == 1 ? name : fmt::format("{} ×{}", name, count);
  }
  return text;
}

// The fix list's total: "all of them together: 0.065 ms of each step's 0.723 ms GPU span (8.9%),
// steps 1.098× faster" (per step where the trace has steps, else over the pipeline). The step's
// GPU span, not its wall span: the kernels' own time, which a kernel fix shortens and a trace
// diff of before and after measures.
std::string total_sentence(const timeline::FixList& list) {
  if (list.steps > 0) {
    double per_step = list.total_saving_us / static_cast<double>(list.steps);
    return fmt::format(
        "all of them together: {} ms of each step's {} ms GPU span ({:.1f}%), steps {:.3f}× "
        "faster",
        fix_ms(per_step), fix_ms(list.step_us), per_step / list.step_us * 100,
        list.total_step_speedup.value_or(1));
  }
  return fmt::format(
      "all of them together: {} ms of the {} ms ({:.1f}%), a {:.3f}× faster pipeline",
      fix_ms(list.total_saving_us), fix_ms(list.pipeline_us),
      list.total_saving_us / list.pipeline_us * 100, list.total_step_speedup.value_or(1));
}

// "in serving units (…): TPOT … ms, … tokens/s; with all of them fixed: …"; basis as given (the
// caller escapes it for its output).
std::string serving_sentence(const timeline::ServingUnits& u, const std::string& basis) {
  return fmt::format(
      "in serving units ({} decode steps, {} tokens per step, as their names say: {}; a step "
      "{} ms of wall time): TPOT {} ms, {} tokens/s; with all of them fixed: TPOT {} ms, {} "
      "tokens/s",
      u.steps, format_number(u.tokens_per_step), basis, format_number(u.step_ms),
      format_number(u.tpot_ms), format_number(u.tokens_per_s), format_number(u.fixed_tpot_ms),
      format_number(u.fixed_tokens_per_s));
}

// The first thing a fix list says when the steps are host-bound: kernels are not what sets the
// pace, and the most a perfect kernel fix could buy of the wall time (all GPU busy time gone).
std::string gate_sentence(const timeline::FixList& list) {
  if (!list.gate || !list.gate->host_bound()) return "";
  const timeline::StepGate& g = *list.gate;
  double idle = g.wall_us - g.busy_us;
  std::string most = idle > 0 ? fmt::format("{:.2f}×", g.wall_us / idle) : "unbounded";
  return fmt::format(
      "the steps are host-bound ({} of {} by kprof budget): the GPU is busy {:.1f}% of each "
      "step's {} ms wall time, so the host, not the kernels, sets the pace; a perfect kernel fix "
      "(all of that busy time gone) would make the steps at most {} faster — kprof budget says "
      "where the host's time goes",
      g.host_bound_steps, g.steps, g.busy_fraction() * 100, fix_ms(g.wall_us), most);
}

// Said before any row where the captures miss much of the trace: a kernel worth fixing was not
// captured, or is held under a spelling the join did not find.
std::string coverage_sentence(const timeline::FixList& list) {
  if (list.trace_kernel_us <= 0 || list.unjoined_trace_kernels.empty()) return "";
  double covered = list.joined_kernel_us / list.trace_kernel_us;
  double largest_joined = 0;
  for (const timeline::FixGroup& g : list.groups) {
    largest_joined = std::max(largest_joined, g.trace_total_us);
  }
  double largest_unjoined = list.unjoined_trace_kernels.front().second;
  if (covered >= 0.5 && largest_unjoined <= largest_joined) return "";
  std::string names;
  for (const auto& [name, us] : list.unjoined_trace_kernels) {
    if (us / list.trace_kernel_us < 0.01) break;
    names += fmt::format("{}{} ({:.1f}%)", names.empty() ? "" : ", ", ellipsize(name, 60),
                         us / list.trace_kernel_us * 100);
  }
  return fmt::format(
      "the captures cover {:.1f}% of the trace's kernel time; its longest kernels no captured "
      "launch was joined to: {} — capture them, or check the capture holds them under another "
      "name",
      covered * 100, names.empty() ? "none over 1%" : names);
}

// "fuse or remove: 5 groups near this GPU's kernel floor …": the groups listed apart.
std::string floor_sentence(const timeline::FixList& list, size_t name_width) {
  std::uint64_t groups = 0, launches = 0;
  double us = 0;
  std::string names;
  for (const timeline::FixGroup& g : list.groups) {
    if (!g.near_floor) continue;
    ++groups;
    launches += g.trace_launches;
    us += g.trace_total_us;
    if (groups <= 5) {
      names += fmt::format("{}{} ×{}", names.empty() ? "" : ", ", ellipsize(g.kernel, name_width),
                           g.trace_launches);
    }
  }
  if (groups == 0) return "";
  if (groups > 5) names += fmt::format(", … {} more", groups - 5);
  std::string share =
      list.steps > 0
          ? fmt::format("{} ms of each step", fix_ms(us / static_cast<double>(list.steps)))
          : fmt::format("{:.1f}% of the pipeline", us / list.pipeline_us * 100);
  return fmt::format(
      "fuse or remove: {} group{} near this GPU's kernel floor of {:.3g} us a launch ({}), {} "
      "launches, {} ms in the trace ({}); a faster kernel saves little there, only fusing them "
      "into their neighbours or removing them does: {}",
      groups, groups == 1 ? "" : "s", list.floor.us, list.floor.source, launches, fix_ms(us), share,
      names);
}

std::string joined_evidence(const timeline::FixGroup& g) {
  std::string evidence;
  for (const std::string& line : g.evidence) evidence += (evidence.empty() ? "" : "; ") + line;
  return evidence;
}

// "All of …", for the page's sentences.
std::string capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

}  // namespace

std::string fix_list_text(const timeline::FixList& list, size_t top, size_t name_width) {
  // A trace whose node table split groups per batch bucket gets a bucket column.
  const bool bucketed = std::any_of(list.groups.begin(), list.groups.end(),
                                    [](const timeline::FixGroup& g) { return !g.bucket.empty(); });
  std::vector<TextTable::Column> columns = {{"#", TextTable::Align::kRight}, {"kernel"}};
  if (bucketed) columns.push_back({"batch bucket"});
  for (TextTable::Column column :
       std::initializer_list<TextTable::Column>{{"grid / block"},
                                                {"launches", TextTable::Align::kRight},
                                                {"trace ms", TextTable::Align::kRight},
                                                {"% pipe", TextTable::Align::kRight},
                                                {"bound by"},
                                                {"achieved → attainable"},
                                                {"saving ms", TextTable::Align::kRight},
                                                {"step ×", TextTable::Align::kRight},
                                                {"replay ÷ trace", TextTable::Align::kRight}}) {
    columns.push_back(std::move(column));
  }
  TextTable table(std::move(columns));
  size_t shown = 0, listed = 0;
  for (const timeline::FixGroup& g : list.groups) {
    if (g.near_floor) continue;  // listed apart, below
    ++listed;
    if (top != 0 && shown == top) continue;
    ++shown;
    std::vector<std::string> row = {std::to_string(shown), ellipsize(g.kernel, name_width)};
    if (bucketed) row.push_back(g.bucket.empty() ? "—" : ellipsize(g.bucket, 40));
    for (std::string cell :
         {dims(g.grid) + " / " + dims(g.block),
          fmt::format("{}/{}", g.launches_captured, g.trace_launches),
          g.trace_launches ? fix_ms(g.trace_total_us) : std::string("not in trace"),
          g.trace_launches ? fmt::format("{:.1f}", g.fraction_of_pipeline * 100) : std::string("—"),
          g.bound_by.empty() ? std::string("—") : g.bound_by + " (" + verdict_spread(g) + ")",
          g.achieved_pct ? fmt::format("{:.0f}% → {:.0f}%", *g.achieved_pct, *g.attainable_pct)
                         : std::string("—"),
          g.estimated_saving_us ? fix_ms(*g.estimated_saving_us) : std::string("—"),
          g.estimated_step_speedup ? fmt::format("{:.3f}", *g.estimated_step_speedup)
                                   : std::string("—"),
          g.replay_fidelity
              ? fmt::format("{:.2f}{}", *g.replay_fidelity, g.fidelity_flagged ? " !" : "")
              : std::string("—")}) {
      row.push_back(std::move(cell));
    }
    table.add_row(std::move(row));
  }
  std::string out;
  if (std::string gate = gate_sentence(list); !gate.empty()) out += gate + "\n";
  if (std::string coverage = coverage_sentence(list); !coverage.empty()) {
    out += escape_for_terminal(coverage) + "\n";
  }
  out += bucketed
             ? fmt::format(
                   "fix list: {} row{} (kernel groups by name, grid and block, split per batch "
                   "bucket of their graph replays), by estimated saving; the trace's GPU work "
                   "spans {} ms",
                   listed, listed == 1 ? "" : "s", fix_ms(list.pipeline_us))
             : fmt::format(
                   "fix list: {} kernel group{} (name, grid, block), by estimated saving; the "
                   "trace's GPU work spans {} ms",
                   listed, listed == 1 ? "" : "s", fix_ms(list.pipeline_us));
  if (list.steps > 0) {
    out += fmt::format(" over {} steps of {} ms GPU span each", list.steps, fix_ms(list.step_us));
  }
  out += "\n" + table.to_string();
  if (top != 0 && listed > top) {
    out += fmt::format("… {} more {}{} (--top 0 shows all)\n", listed - top,
                       bucketed ? "row" : "group", listed - top == 1 ? "" : "s");
  }
  if (std::string floor = floor_sentence(list, name_width); !floor.empty()) {
    out += escape_for_terminal(floor) + "\n";
  }
  if (list.total_saving_us > 0) out += total_sentence(list) + "\n";
  if (list.serving) {
    out += serving_sentence(*list.serving, "\"" + escape_for_terminal(list.serving->basis) + "\"") +
           "\n";
  }
  // The evidence of the first rows, which a user acts on (the near-floor groups sort last).
  for (size_t i = 0; i < list.groups.size() && i < 3 && !list.groups[i].near_floor; ++i) {
    out += fmt::format("  {}: {}\n", i + 1, escape_for_terminal(joined_evidence(list.groups[i])));
  }
  if (!list.groups.empty() && !list.groups.front().hot_spots_argv.empty()) {
    out += "where in the kernel (1): " +
           escape_for_terminal(quoted_command(list.groups.front().hot_spots_argv)) +
           " (the instructions with the most stall samples; the capture needs --set full)\n";
  }
  out +=
      "saving = trace time × (1 − achieved ÷ attainable) of the resource that binds the group "
      "(attainable: a measured ceiling of this GPU where kprof calibrate measured one, else the "
      "datasheet peak; a latency-bound group is held to its nearer roof); step × = the steps' "
      "GPU time (the pipeline's without steps) over itself less the saving. Replay ÷ trace outside "
      "0.8–1.25 (!) means ncu's "
      "replay did not run as the trace did. --per-launch adds the per-launch verdicts.\n";
  return out;
}

json fix_list_json(const timeline::FixList& list) {
  json groups = json::array();
  for (const timeline::FixGroup& g : list.groups) {
    json verdicts = json::object();
    for (const auto& [name, count] : g.verdicts) verdicts[name] = count;
    groups.push_back({{"kernel", g.kernel},
                      {"canonical_name", g.canonical},
                      {"bucket", g.bucket.empty() ? json(nullptr) : json(g.bucket)},
                      {"grid", {g.grid.x, g.grid.y, g.grid.z}},
                      {"block", {g.block.x, g.block.y, g.block.z}},
                      {"launches_captured", g.launches_captured},
                      {"captured_mean_us", g.captured_mean_us},
                      {"captured_min_us", g.captured_min_us},
                      {"captured_max_us", g.captured_max_us},
                      {"verdicts", verdicts},
                      {"trace_launches", g.trace_launches},
                      {"trace_total_us", g.trace_total_us},
                      {"fraction_of_pipeline", g.fraction_of_pipeline},
                      {"bound_by", g.bound_by.empty() ? json(nullptr) : json(g.bound_by)},
                      {"roofline", g.roofline},
                      {"achieved_pct", optional_number(g.achieved_pct)},
                      {"attainable_pct", optional_number(g.attainable_pct)},
                      {"attainable", g.attainable.empty() ? json(nullptr) : json(g.attainable)},
                      {"saving_fraction", optional_number(g.saving_fraction)},
                      {"estimated_saving_us", optional_number(g.estimated_saving_us)},
                      {"estimated_saving_us_per_step",
                       g.estimated_saving_us && list.steps > 0
                           ? json(*g.estimated_saving_us / static_cast<double>(list.steps))
                           : json(nullptr)},
                      {"estimated_step_speedup", optional_number(g.estimated_step_speedup)},
                      {"replay_fidelity", optional_number(g.replay_fidelity)},
                      {"replay_fidelity_flagged", g.fidelity_flagged},
                      {"evidence", g.evidence},
                      {"hot_spots_argv", g.hot_spots_argv},
                      {"near_floor", g.near_floor}});
  }
  json gate = nullptr;
  if (list.gate) {
    gate = {{"steps", list.gate->steps},
            {"host_bound_steps", list.gate->host_bound_steps},
            {"kernel_bound_steps", list.gate->kernel_bound_steps},
            {"wall_us", list.gate->wall_us},
            {"busy_us", list.gate->busy_us},
            {"busy_fraction", list.gate->busy_fraction()},
            {"host_bound", list.gate->host_bound()}};
  }
  json unjoined = json::array();
  for (const auto& [name, us] : list.unjoined_trace_kernels) {
    unjoined.push_back({{"name", name}, {"trace_total_us", us}});
  }
  json serving = nullptr;
  if (list.serving) {
    const timeline::ServingUnits& u = *list.serving;
    serving = {{"steps", u.steps},
               {"requests_per_step", u.requests_per_step},
               {"tokens_per_step", u.tokens_per_step},
               {"step_ms", u.step_ms},
               {"tpot_ms", u.tpot_ms},
               {"tokens_per_s", u.tokens_per_s},
               {"fixed_step_ms", u.fixed_step_ms},
               {"fixed_tpot_ms", u.fixed_tpot_ms},
               {"fixed_tokens_per_s", u.fixed_tokens_per_s},
               {"basis", u.basis}};
  }
  return {{"pipeline_us", list.pipeline_us},
          {"steps", list.steps},
          {"serving", serving},
          {"step_us", list.steps > 0 ? json(list.step_us) : json(nullptr)},
          {"step_wall_us",
           list.steps > 0 && list.step_wall_us > 0 ? json(list.step_wall_us) : json(nullptr)},
          {"total_estimated_saving_us", list.total_saving_us},
          {"total_estimated_step_speedup", optional_number(list.total_step_speedup)},
          {"gate", gate},
          {"kernel_floor_us", list.floor.us > 0 ? json(list.floor.us) : json(nullptr)},
          {"kernel_floor_source", list.floor.us > 0 ? json(list.floor.source) : json(nullptr)},
          {"coverage",
           {{"trace_kernel_us", list.trace_kernel_us},
            {"joined_kernel_us", list.joined_kernel_us},
            {"unjoined_trace_kernels", unjoined}}},
          {"opportunities", groups}};
}

std::string fix_list_html(const timeline::FixList& list) {
  auto cell = [](const std::string& text, const char* klass = nullptr) {
    return klass ? fmt::format("<td class=\"{}\">{}</td>", klass, html_escape(text))
                 : "<td>" + html_escape(text) + "</td>";
  };
  std::string html = "<h2>Fix list</h2>\n";
  for (const std::string& sentence : {gate_sentence(list), coverage_sentence(list)}) {
    if (!sentence.empty()) html += "<p><b>" + html_escape(capitalised(sentence)) + ".</b></p>\n";
  }
  html += fmt::format(
      "<p>{} kernel group{} (name, grid, block), by estimated saving; the trace's GPU work spans "
      "{} ms{}.</p>\n",
      list.groups.size(), list.groups.size() == 1 ? "" : "s", fix_ms(list.pipeline_us),
      list.steps > 0
          ? fmt::format(" over {} steps of {} ms GPU span each", list.steps, fix_ms(list.step_us))
          : "");
  html +=
      "<table id=\"fix-list\"><thead><tr><th>#</th><th class=\"name\">kernel</th><th>grid / "
      "block</th><th>launches captured/trace</th><th>trace ms</th><th>% pipe</th><th>bound "
      "by</th><th>achieved → attainable</th><th>saving ms</th><th>saving ms per step</th><th>step "
      "×</th><th>replay ÷ trace</th><th class=\"name\">hot spots</th></tr></thead><tbody>\n";
  size_t rank = 0;
  for (const timeline::FixGroup& g : list.groups) {
    ++rank;
    html += fmt::format("<tr title=\"{}\">", html_escape(joined_evidence(g)));
    html += cell(std::to_string(rank));
    html += cell(g.bucket.empty() ? g.kernel : g.kernel + " [" + g.bucket + "]", "name");
    html += cell(dims(g.grid) + " / " + dims(g.block));
    html += cell(fmt::format("{}/{}", g.launches_captured, g.trace_launches));
    html += cell(g.trace_launches ? fix_ms(g.trace_total_us) : "not in trace");
    html += cell(g.trace_launches ? fmt::format("{:.1f}", g.fraction_of_pipeline * 100) : "—");
    html += cell(g.bound_by.empty() ? "—" : g.bound_by + " (" + verdict_spread(g) + ")", "text");
    html +=
        cell(g.achieved_pct ? fmt::format("{:.0f}% → {:.0f}%", *g.achieved_pct, *g.attainable_pct)
                            : "—");
    html += cell(g.estimated_saving_us ? fix_ms(*g.estimated_saving_us) : "—");
    html += cell(g.estimated_saving_us && list.steps > 0
                     ? fix_ms(*g.estimated_saving_us / static_cast<double>(list.steps))
                     : "—");
    html += cell(g.estimated_step_speedup ? fmt::format("{:.3f}", *g.estimated_step_speedup) : "—");
    html += cell(g.replay_fidelity
                     ? fmt::format("{:.2f}{}", *g.replay_fidelity, g.fidelity_flagged ? " !" : "")
                     : "—");
    html += g.hot_spots_argv.empty()
                ? std::string("<td class=\"name\">—</td>")
                : "<td class=\"name\"><code>" + html_escape(quoted_command(g.hot_spots_argv)) +
                      "</code></td>";
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  if (std::string floor = floor_sentence(list, 60); !floor.empty()) {
    html += "<p>" + html_escape(capitalised(floor)) + ".</p>\n";
  }
  if (list.total_saving_us > 0) html += "<p>" + capitalised(total_sentence(list)) + ".</p>\n";
  if (list.serving) {
    html += "<p>" +
            capitalised(serving_sentence(*list.serving,
                                         "<code>" + html_escape(list.serving->basis) + "</code>")) +
            ".</p>\n";
  }
  html += "<ol class=\"note\">";
  for (size_t i = 0; i < list.groups.size() && i < 3; ++i) {
    html += "<li>" + html_escape(joined_evidence(list.groups[i])) + "</li>";
  }
  html +=
      "</ol>\n<p class=\"note\">saving = trace time × (1 − achieved ÷ attainable) of the "
      "resource that binds the group (attainable: a measured ceiling of this GPU where kprof "
      "calibrate measured one, else the datasheet peak; a latency-bound group is held to its "
      "nearer roof); step × = the steps' GPU time over itself less the saving. Replay ÷ trace "
      "outside 0.8–1.25 (!) means ncu's replay did not run as the trace did. Hover a row for its "
      "evidence.</p>\n";
  return html;
}

}  // namespace kprof::render
