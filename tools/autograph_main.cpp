// autograph: command-line front end. Errors print one line "autograph: error: ..." and exit 2.
#include <iostream>

#include "autograph/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"autograph: inter-operator parallel inference for TorchScript models"};
  app.require_subcommand(1);
  auto run_inspect = autograph::cli::AddInspectCommand(app);
  auto run_optimize = autograph::cli::AddOptimizeCommand(app);
  auto run_bench = autograph::cli::AddBenchCommand(app);
  auto run_calibrate = autograph::cli::AddCalibrateCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (app.got_subcommand("inspect")) return run_inspect();
    if (app.got_subcommand("optimize")) return run_optimize();
    if (app.got_subcommand("bench")) return run_bench();
    if (app.got_subcommand("calibrate")) return run_calibrate();
  } catch (const autograph::Error& e) {
    std::cerr << "autograph: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "autograph: internal error: " << e.what() << "\n";
    return 3;
  }
  return 1;
}
