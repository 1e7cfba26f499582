#pragma once

namespace kprof::cli {

// Parses argv, runs the chosen subcommand, prints its output; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace kprof::cli
