#include "cli/cli.h"

int main(int argc, char** argv) { return kprof::cli::run_cli(argc, argv); }
