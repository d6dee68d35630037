// autograph: command-line front end. Errors print one line "autograph: error: ..." and exit 2.
#include <dlfcn.h>

#include <iostream>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "commands.h"

namespace {

// Libraries of custom operators (TORCH_LIBRARY) a model calls, loaded before the model is: what
// torch.ops.load_library does in Python.
void LoadLibraries(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char* why = dlerror();
      throw autograph::InputError("--load-library " + path + ": " + (why ? why : "cannot load it"));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"autograph: inter-operator parallel inference for TorchScript models"};
  app.require_subcommand(1);
  app.fallthrough();  // --load-library also after the command's name
  std::vector<std::string> libraries;
  app.add_option("--load-library", libraries,
                 "A shared library of custom operators the model calls (TORCH_LIBRARY), loaded first; repeatable");
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
    LoadLibraries(libraries);
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
