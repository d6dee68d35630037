#pragma once
// Subcommands of the `autograph` CLI. Each registers itself on the app and returns its exit code.
#include <CLI/CLI.hpp>

#include <functional>

namespace autograph::cli {

using Command = std::function<int()>;

Command AddInspectCommand(CLI::App& app);

}  // namespace autograph::cli
