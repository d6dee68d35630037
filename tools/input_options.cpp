#include "autograph/error.h"
#include "commands.h"

namespace autograph::cli {

void AddInputOptions(CLI::App* cmd, InputOptions* options) {
  cmd->add_option("--input-shape", options->shapes,
                  "Shape of one forward() argument, e.g. 1,3,224,224; repeat per argument (default: NAME.json)");
  cmd->add_option("--dtype", options->dtypes, "dtype per --input-shape (float32, int64, ...)");
  cmd->add_option("--inputs", options->file,
                  "JSON description of forward()'s arguments, as NAME.json: tensors, tuples, lists, dicts, "
                  "numbers, bools, null (see the README)");
}

std::vector<InputSpec> ResolveInputSpecs(const std::string& model, const InputOptions& o) {
  if (!o.file.empty()) {
    if (!o.shapes.empty()) throw InputError("give either --inputs or --input-shape, not both");
    return ReadInputSpecs(o.file);
  }
  if (o.shapes.empty()) {
    auto spec_path = InputSpecPathFor(model);
    if (!spec_path) {
      throw InputError("no example input shapes for '" + model +
                       "': pass --input-shape once per forward() argument (e.g. --input-shape 1,3,224,224), "
                       "or put NAME.json beside the model");
    }
    return ReadInputSpecs(*spec_path);
  }
  if (!o.dtypes.empty() && o.dtypes.size() != o.shapes.size()) {
    throw InputError("got " + std::to_string(o.shapes.size()) + " --input-shape but " + std::to_string(o.dtypes.size()) +
                     " --dtype; give one dtype per input or none (float32)");
  }
  std::vector<InputSpec> specs;
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    InputSpec spec;
    spec.shape = ParseShape(o.shapes[i]);
    if (!o.dtypes.empty()) spec.dtype = ParseDtype(o.dtypes[i]);
    specs.push_back(spec);
  }
  return specs;
}

}  // namespace autograph::cli
