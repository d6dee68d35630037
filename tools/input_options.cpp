#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iterator>

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

std::vector<std::vector<c10::IValue>> ReadCalibrationInputs(const std::string& path) {
  const std::string flag = "--calibration " + path;
  if (!std::filesystem::is_regular_file(path)) throw InputError(flag + ": no such file");
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw InputError(flag + ": cannot read it");
  c10::IValue saved;
  try {
    saved = torch::pickle_load(bytes);
  } catch (const std::exception& e) {  // c10::Error, or the unpickler's std::runtime_error
    const std::string why = FirstLineOf(e);  // its first sentence: the rest is the reader's internals
    throw InputError(flag + ": not a file of input tuples saved by torch.save (" + why.substr(0, why.find(". ")) +
                     ")");
  }
  auto entries_of = [](const c10::IValue& v) {
    return v.isTuple() ? v.toTupleRef().elements().vec() : v.toList().vec();
  };
  if (!saved.isList() && !saved.isTuple())
    throw InputError(flag + ": a list of input tuples, one per call to check (torch.save([(x1,), (x2,)], FILE)), " +
                     "not " + saved.tagKind());
  std::vector<std::vector<c10::IValue>> calls;
  for (const c10::IValue& entry : entries_of(saved)) {
    if (entry.isTensor()) {
      calls.push_back({entry});
    } else if (entry.isList() || entry.isTuple()) {
      calls.push_back(entries_of(entry));
    } else {
      throw InputError(flag + ": entry " + std::to_string(calls.size()) + " (" + entry.tagKind() +
                       ") is not a tuple of a call's arguments");
    }
  }
  return calls;
}

}  // namespace autograph::cli
