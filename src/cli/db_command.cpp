// kprof db import|query|facts: the findings database.
#include <memory>

#include "analysis/analysis_tables.h"
#include "cli/command.h"
#include "pipeline/reports.h"
#include "render/db_render.h"
#include "store/findings_db.h"
#include "store/postgres_connection.h"

namespace kprof::cli {
namespace {

struct DbOptions {
  std::string db_path = "kprof-findings.db";
  std::string db_schema = store::kDefaultPostgresSchema;
  std::vector<std::string> reports;
  std::string sync_source;
  store::RunLabels labels;
  std::string kernel_regex = ".";
  std::string by = "stage";
  size_t top = 5;
  bool json = false;
};

ExitCode run_import(const DbOptions& options, Output& output) {
  std::vector<model::Report> reports =
      pipeline::load_reports(options.reports, pipeline::for_analysis());  // all read before writing
  analysis::AnalysisTables tables = analysis::load_analysis_tables();
  analysis::AnalysisConfig config = tables.config();
  store::FindingsDb db(options.db_path, store::FindingsDb::Access::kWrite, options.db_schema);
  std::vector<store::ImportedRun> runs = db.import_reports(reports, options.labels, config);
  output.stdout_text =
      render::import_text(reports, runs, db.name(), db.count("runs"), db.count("kernels"));
  return ExitCode::kOk;
}

ExitCode run_query(const std::string& what, const DbOptions& options, Output& output) {
  store::FindingsDb db(options.db_path, store::FindingsDb::Access::kRead, options.db_schema);
  if (what == "history") {
    pipeline::compile_user_regex(options.kernel_regex, "--kernel");
    auto rows = db.kernel_history(options.kernel_regex);
    output.stdout_text =
        options.json ? render::history_json_text(rows) : render::history_text(rows);
    return ExitCode::kOk;
  }
  std::vector<store::WorstRow> rows;
  try {
    rows = db.worst_by(options.by, options.top);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  output.stdout_text = options.json ? render::worst_json_text(rows, options.by)
                                    : render::worst_text(rows, options.by);
  return ExitCode::kOk;
}

ExitCode run_predictions(const DbOptions& options, Output& output) {
  store::FindingsDb db(options.db_path, store::FindingsDb::Access::kRead, options.db_schema);
  auto rows = db.prediction_outcomes();
  output.stdout_text =
      options.json ? render::predictions_json_text(rows) : render::predictions_text(rows);
  return ExitCode::kOk;
}

ExitCode run_sync(const DbOptions& options, Output& output) {
  store::FindingsDb source(options.sync_source);  // read-only, whatever happens
  store::FindingsDb target(options.db_path, store::FindingsDb::Access::kWrite, options.db_schema);
  store::SyncCounts counts = target.sync_from(source);
  output.stdout_text = render::sync_text(counts, source.name(), target.name());
  return ExitCode::kOk;
}

ExitCode run_facts(const DbOptions& options, Output& output) {
  store::FindingsDb db(options.db_path, store::FindingsDb::Access::kRead, options.db_schema);
  auto rows = db.facts();
  output.stdout_text = options.json ? render::facts_json_text(rows) : render::facts_text(rows);
  return ExitCode::kOk;
}

}  // namespace

void define_db(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<DbOptions>();
  CLI::App* db = parent.add_subcommand(
      "db", "The findings database: import captures, query kernel history, hardware facts");
  db->footer(
      "An SQLite file (--db, default ./kprof-findings.db; WAL journal) or, for a team, a\n"
      "PostgreSQL server (--db postgresql://USER@HOST:PORT/DBNAME; the password from PGPASSWORD\n"
      "or ~/.pgpass, never the URL; the tables in the schema --db-schema, default kprof) of runs,\n"
      "their kernels, verdicts and the metrics the verdicts rest on, and hardware facts (the\n"
      "database's datasheet figures and ceilings measured by imported captures). Versioned\n"
      "schema; several processes may import at once; an import is one transaction (all or none)\n"
      "and skips a report already there (by its SHA-256). Queries only read. kprof marks its\n"
      "databases (SQLite: application id \"kprf\"; PostgreSQL: its kprof_schema table) and\n"
      "refuses, untouched, any other (exit 4).\n\n"
      "Examples:\n"
      "  kprof db import run.ncu-rep --campaign nightly --model llama-70b --engine vllm\n"
      "  kprof db query history -k nvjet\n"
      "  kprof db query worst --by model\n"
      "  kprof db facts\n"
      "  kprof db predictions   # what fix lists predicted against what diffs realised\n"
      "  kprof db sync kprof-findings.db --db postgresql://me@db.example:5432/perf");
  db->require_subcommand(1);
  db->add_option("--db", options->db_path,
                 "Database file, or postgresql://USER@HOST:PORT/DBNAME (password: PGPASSWORD or "
                 "~/.pgpass)")
      ->capture_default_str();
  db->add_option("--db-schema", options->db_schema, "PostgreSQL: the schema holding kprof's tables")
      ->capture_default_str();

  CLI::App* import = db->add_subcommand("import", "Import reports as runs");
  import->add_option("REPORT", options->reports, "Nsight Compute reports or CSV exports")
      ->required();
  import->add_option("--campaign", options->labels.campaign, "Campaign label");
  import->add_option("--cell", options->labels.cell, "Cell id within the campaign");
  import->add_option("--model", options->labels.model, "Model served");
  import->add_option("--engine", options->labels.engine, "Serving engine (vLLM, SGLang, …)");
  import->add_option("--framework", options->labels.framework, "Framework versions");
  import->callback([&runner, options] {
    runner = [options](Output& output) { return run_import(*options, output);
};
}  // namespace kprof::cli
);

CLI::App* query = db->add_subcommand("query", "Kernel history across runs, or the worst kernels");
query->require_subcommand(1);
CLI::App* history = query->add_subcommand("history", "Every run of kernels matching --kernel");
history->add_option("-k,--kernel", options->kernel_regex, "Kernel name regex (RE2)");
history->add_flag("--json", options->json, "Print JSON");
history->callback([&runner, options] {
  runner = [options](Output& output) { return run_query("history", *options, output); };
});
CLI::App* worst = query->add_subcommand("worst", "The longest kernels per stage, model or GPU");
worst->add_option("--by", options->by, "stage, model or gpu")
    ->check(CLI::IsMember({"stage", "model", "gpu"}))
    ->capture_default_str();
worst->add_option("-n,--top", options->top, "Kernels per group")->capture_default_str();
worst->add_flag("--json", options->json, "Print JSON");
worst->callback([&runner, options] {
  runner = [options](Output& output) { return run_query("worst", *options, output); };
});

CLI::App* sync = db->add_subcommand(
    "sync", "Copy a findings database's records into --db (a person's history into the team's)");
sync->add_option("SOURCE", options->sync_source,
                 "The database to copy from (a file, or a URL), read only")
    ->required();
sync->callback([&runner, options] {
  runner = [options](Output& output) { return run_sync(*options, output); };
});

CLI::App* facts = db->add_subcommand("facts", "Hardware facts: datasheet and measured");
facts->add_flag("--json", options->json, "Print JSON");
facts->callback([&runner, options] {
  runner = [options](Output& output) { return run_facts(*options, output); };
});

CLI::App* predictions = db->add_subcommand(
    "predictions", "Fix-list predictions against realised gains (kprof diff --outcomes-db)");
predictions->add_flag("--json", options->json, "Print JSON");
predictions->callback([&runner, options] {
  runner = [options](Output& output) { return run_predictions(*options, output); };
});
}

}  // namespace kprof::cli
