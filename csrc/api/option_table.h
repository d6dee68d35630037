#pragma once
// Every option of optimize / substitute, declared once: name, type, default (read from a
// default-constructed OptimizeOptions, so it cannot drift from the struct), which methods and devices
// it applies to, its allowed values, and its help text. Everything else is made from this table: the
// JSON / Python options (OptimizeOptionsFromJson), their validation, Python's typed Settings (checked
// against OptimizeOptionTableJson by a test), and the README's option table (scripts/option_docs.py).
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograph/optimize_options.h"

namespace autograph {

struct OptionSpec {
  std::string name;     // as Python and JSON spell it
  std::string type;     // "bool", "int", "float" or "str"
  std::string applies;  // which methods / devices / paths it acts on: "all", "ios, autograph", "cpu", ...
  std::string help;
  // When the default is decided at the call (the inputs' device, the cost model by device): what the
  // docs say instead of the struct's value; Python's Settings leaves such options None.
  std::string default_note;
  std::vector<std::string> choices;     // str: the values it takes (empty: any string)
  std::optional<double> min, max;       // int, float: inclusive bounds
  // Sets the option from a value already checked against type, choices and bounds; may throw
  // InputError for what only it can check (a device string).
  std::function<void(OptimizeOptions&, const nlohmann::json&)> set;
  std::function<nlohmann::json(const OptimizeOptions&)> get;  // the value in `options`
};

// The table, in the order the docs list it.
const std::vector<OptionSpec>& OptimizeOptionTable();

// Starts from the defaults and sets each key given. Throws InputError naming the key for an unknown
// key (with the known ones), a value of the wrong type, outside its choices or bounds, or a device
// that is not cpu, cuda or cuda:N.
OptimizeOptions OptimizeOptionsFromJson(const nlohmann::json& options);

// Checks options already in the struct (a C++ caller's) as OptimizeOptionsFromJson checks JSON:
// InputError naming the first option whose value the table refuses.
void CheckOptimizeOptions(const OptimizeOptions& options);

// The options that differ from the defaults, by the table's names (shapes left out): what
// OptimizeOptionsFromJson turns back into `options` (shapes and example inputs aside).
nlohmann::json OptimizeOptionsToJson(const OptimizeOptions& options);

// The two paths a model takes: the TorchScript path (optimize, substitute: a TorchScript module) and
// the export path (OptimizeExported: a torch.export program's ATen graph).
enum class ModelPath { TorchScript, Export };

// Whether an option acts on `path`: false for an option whose `applies` names the other path alone
// ("TorchScript path", "export path, cpu", ...). Devices are not checked here: an option for another
// device than the one planned for is ignored there (cuda_graph on the CPU), as the table documents.
bool AppliesOn(const OptionSpec& spec, ModelPath path);

// InputError for the first option of `set` (table names: the options a caller set) that does not act
// on `path`, naming it, what it applies to and what to do; nothing for names the table does not know
// (OptimizeOptionsFromJson refuses those).
void CheckOptionsApplyOn(const std::vector<std::string>& set, ModelPath path);

// The keys of a JSON object of options (the options given by name, the CLI's flags and Python's
// keywords: set explicitly, whatever their value).
std::vector<std::string> OptionKeysOf(const nlohmann::json& options);

// The options `options` sets apart from the defaults, by the table's names (substitutions left out:
// each of its six rewrites is named on its own). A struct does not record which fields its caller
// wrote, so for a C++ caller "set" means "differs from the default".
std::vector<std::string> OptionsSetIn(const OptimizeOptions& options);

// The keys OptimizeOptionsFromJson knows, in the order of the table.
std::vector<std::string> OptimizeOptionKeys();

// The table as JSON: [{name, type, default, default_note?, applies, help, choices?, min?, max?}] (the op
// autograph::option_table returns it to Python).
nlohmann::json OptimizeOptionTableJson();

// OptimizeOptions::shapes in the option's text form: shapes by ';', a shape's tensors by ',', sizes by
// 'x' ("1x128,1x128;8x512,8x512"); "" for none.
std::string ShapesText(const std::vector<std::vector<std::vector<int64_t>>>& shapes);

}  // namespace autograph
