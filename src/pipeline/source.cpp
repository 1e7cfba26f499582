#include "pipeline/source.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <map>

#include "common/child_process.h"
#include "common/error.h"
#include "common/utf8.h"
#include "importers/cubin/cubin.h"
#include "importers/cubin/line_table.h"
#include "pipeline/reports.h"
#include "render/source_render.h"

namespace kprof::pipeline {
namespace {

constexpr std::uint64_t kInstructionBytes = 16;

std::string word_hex(std::string_view bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = value << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  }
  return fmt::format("{:016x}", value);
}

// Without a cubin the function's size is not known: up to the last instruction with a value.
std::uint64_t size_from_counters(const model::Kernel& kernel, std::uint64_t start) {
  std::uint64_t end = start;
  for (const model::Metric& metric : kernel.metrics) {
    if (!analysis::may_be_source_counter(metric.name.str())) continue;
    if (metric.name.str() == analysis::kFunctionStart) continue;
    for (const model::MetricInstance& instance : metric.instances) {
      if (instance.correlation_id.kind() != model::MetricValue::Kind::kUint64) continue;
      std::uint64_t pc = instance.correlation_id.integer();
      // 16 MiB past the start at most: a far-away id is not this function's.
      if (pc >= end && pc - start < (std::uint64_t{1} << 24)) end = pc + kInstructionBytes;
    }
  }
  return end - start;
}

std::string file_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

importers::ImportOptions for_source() {
  importers::ImportOptions options;
  options.instances = false;
  options.instances_of = [](std::string_view metric) {
    return analysis::may_be_source_counter(metric);
  };
  options.sources = true;
  return options;
}

analysis::KernelSource kernel_source(const std::string& path, const model::Report& report,
                                     std::size_t index, std::size_t top, Disassembler* disassembler,
                                     std::string& failure) {
  const model::Kernel& kernel = report.kernels[index];
  analysis::KernelSource view;
  view.kernel = index;
  view.name = kernel.display_name();
  view.mangled = kernel.mangled_name;
  const model::SourceModule* module = report.module_of(kernel);
  const model::ModuleFunction* entry = module ? module->function(kernel.mangled_name) : nullptr;
  if (module) {
    view.module_reference = module->reference;
    view.sm = module->sm_name();
    view.cubin_bytes = module->binary.size();
  }
  std::optional<std::uint64_t> start = analysis::function_start(kernel);
  if (!start && entry) start = entry->address;
  if (!start) {
    view.unavailable =
        "no per-PC source counters: the report records no function start (launch__function_pcs; "
        "captured without ncu's SourceCounters section, which --set full includes)";
    return view;
  }
  std::optional<importers::cubin::Cubin> cubin;
  std::optional<importers::cubin::Function> function;
  if (module && !module->binary.empty()) {
    importers::cubin::CubinOrigin origin{
        path, module->binary_offset, fmt::format("the cubin of module {:#x}", module->reference)};
    cubin = importers::cubin::Cubin::parse(module->binary, origin);
    function = cubin->function(kernel.mangled_name);
  }
  std::uint64_t size = function ? function->size : size_from_counters(kernel, *start);
  view.counters = analysis::source_counters(kernel, *start, size);
  if (function && function->symbol_index) {
    view.symbol_index = function->symbol_index;
  } else if (entry && entry->symbol_index) {
    view.symbol_index = entry->symbol_index;
  }
  if (view.counters.metrics.empty()) {
    view.unavailable =
        "no per-PC source counters in this result (captured without ncu's SourceCounters "
        "section, which --set full includes)";
    return view;
  }
  const std::size_t count = view.counters.instructions();
  view.cuda.assign(count, std::nullopt);
  view.ptx.assign(count, "");
  view.sass.assign(count, "");
  view.encoding.assign(count, "");
  if (!cubin) {
    view.line_info = "none (the report stored no cubin for this module)";
  } else if (!function) {
    view.line_info = "none (the cubin has no function " + kernel.mangled_name + ")";
  } else {
    std::string_view section = cubin->section_bytes(function->section);
    // Line tables count from the start of the function's section.
    std::uint64_t base = static_cast<std::uint64_t>(function->text.data() - section.data());
    for (std::size_t i = 0; i < count && (i + 1) * kInstructionBytes <= function->text.size();
         ++i) {
      std::string_view word = function->text.substr(i * kInstructionBytes, kInstructionBytes);
      view.encoding[i] = word_hex(word.substr(8)) + " " + word_hex(word.substr(0, 8));
    }
    auto cuda = importers::cubin::read_line_table(*cubin, ".debug_line", function->section);
    auto ptx = importers::cubin::read_line_table(*cubin, ".nv_debug_line_sass", function->section);
    std::vector<std::string> ptx_text = importers::cubin::ptx_lines(*cubin);
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t offset = base + i * kInstructionBytes;
      if (const auto* row = cuda.at(offset); row && row->file != 0) {
        view.cuda[i] = analysis::SourceLocation{cuda.files[row->file], row->line};
      }
      if (const auto* row = ptx.at(offset); row && row->line > 0 && row->line <= ptx_text.size()) {
        view.ptx[i] = fmt::format("ptx:{} {}", row->line, ptx_text[row->line - 1]);
      }
    }
    using Status = importers::cubin::LineTable::Status;
    if (cuda.status == Status::kUnsupported) {
      view.line_info = "not read (" + cuda.unsupported + ")";
    } else if (cuda.rows.empty() && ptx.rows.empty()) {
      view.line_info = "none (not built with -lineinfo)";
    } else {
      view.line_info = fmt::format("CUDA {} rows, PTX {} rows", cuda.rows.size(), ptx.rows.size());
    }
    if (disassembler && view.symbol_index) {
      auto text = disassembler->disassemble(module->binary, *view.symbol_index, failure);
      if (text) {
        for (std::size_t i = 0; i < count; ++i) {
          auto it = text->find(i * kInstructionBytes);
          if (it != text->end()) view.sass[i] = it->second;
        }
      }
    }
  }
  view.hottest = analysis::hottest_instructions(view.counters, top, view.ranked_by_samples);
  view.lines = analysis::line_totals(view.counters, view.cuda);
  return view;
}

Answer source(const SourceOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  if (options.top == 0) throw UsageError("--top 0: give at least 1");
  std::unique_ptr<RE2> filter = compile_user_regex(options.kernel_regex, "--kernel");
  std::vector<model::Report> reports = load_reports(options.paths, for_source());
  output.notes += reading_notes(reports);
  std::vector<std::vector<size_t>> selected;
  for (const auto& report : reports) selected.push_back(select_kernels(report, filter.get()));
  require_some_selected(reports, selected, options.kernel_regex);

  std::shared_ptr<Disassembler> disassembler = options.disassembler;
  render::SassSource sass;
  if (!disassembler && !options.no_sass) {
    std::string found = locate_nvdisasm(options.nvdisasm);
    if (!found.empty()) disassembler = nvdisasm_at(found);
  }
  if (disassembler) sass.disassembler = disassembler->describe();
  sass.skipped = options.no_sass && !options.disassembler;

  // Ctrl-C or SIGTERM while nvdisasm runs stopped only that nvdisasm: the next kernel's started
  // (24 signals for 24 kernels; exit 0 with one). From here a signal only sets the flag, the
  // running nvdisasm is stopped at once, and the command ends interrupted (exit 8), printing
  // nothing of its partial answer.
  keep_interrupts();
  auto interrupted = [&] {
    Answer stopped;
    stopped.notes = "kprof: interrupted: no source printed\n";
    stopped.code = ExitCode::kIncomplete;
    return stopped;
  };
  std::vector<analysis::KernelSource> views;
  for (size_t r = 0; r < reports.size(); ++r) {
    for (size_t k : selected[r]) {
      if (interrupt_received()) return interrupted();
      std::string failure;
      analysis::KernelSource view =
          kernel_source(options.paths[r], reports[r], k, options.top, disassembler.get(), failure);
      view.report = r;
      if (interrupt_received()) return interrupted();
      if (!failure.empty()) {
        output.notes +=
            fmt::format("kprof: warning: {} on {} ({}): {}; no SASS text for it\n",
                        escape_for_terminal(sass.disassembler), escape_for_terminal(view.mangled),
                        escape_for_terminal(file_name(options.paths[r])), failure);
      }
      views.push_back(std::move(view));
    }
  }
  std::vector<std::string> names;
  for (const std::string& path : options.paths) names.push_back(file_name(path));
  output.out = options.json ? render::source_json_text(argv, names, views, sass)
                            : render::source_text(names, views, sass);
  return output;
}

}  // namespace kprof::pipeline
