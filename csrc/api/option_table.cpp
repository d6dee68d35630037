// The declaration of every optimize option; see option_table.h.
#include "api/option_table.h"

#include <c10/core/Device.h>

#include <cmath>
#include <sstream>
#include <type_traits>
#include <utility>

#include "autograph/error.h"
#include "core/output_error.h"

namespace autograph {
namespace {

template <typename T>
const char* TypeName() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T>) return "int";
  else if constexpr (std::is_floating_point_v<T>) return "float";
  else return "str";
}

// An option stored in one field, which `field` (generic: for a const or a mutable OptimizeOptions)
// picks out.
template <typename T, typename Field>
OptionSpec Option(std::string name, std::string applies, std::string help, Field field,
                  std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt,
                  std::vector<std::string> choices = {}) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.type = TypeName<T>();
  spec.applies = std::move(applies);
  spec.help = std::move(help);
  spec.choices = std::move(choices);
  spec.min = min;
  spec.max = max;
  spec.set = [field](OptimizeOptions& o, const nlohmann::json& v) { field(o) = v.get<T>(); };
  spec.get = [field](const OptimizeOptions& o) { return nlohmann::json(field(o)); };
  return spec;
}

using Shapes = std::vector<std::vector<std::vector<int64_t>>>;

// The text form above (Python's Settings writes lists in it).
Shapes ParseShapes(const std::string& text) {
  Shapes shapes;
  std::stringstream all(text);
  for (std::string shape; std::getline(all, shape, ';');) {
    shapes.emplace_back();
    std::stringstream tensors(shape);
    for (std::string tensor; std::getline(tensors, tensor, ',');) {
      shapes.back().emplace_back();
      std::stringstream sizes(tensor);
      for (std::string n; std::getline(sizes, n, 'x');) {
        size_t used = 0;
        int64_t value = -1;
        try {
          value = std::stoll(n, &used);
        } catch (const std::exception&) {
        }
        if (n.empty() || used != n.size() || value < 0)
          throw InputError("is not a list of shapes: \"" + tensor + "\" (write e.g. 1x3x224x224;8x3x224x224, "
                           "a shape's tensors separated by ',')");
        shapes.back().back().push_back(value);
      }
    }
  }
  return shapes;
}

OptionSpec WithNote(OptionSpec spec, std::string note) {
  spec.default_note = std::move(note);
  return spec;
}

// The six graph rewrites `substitutions` turns on or off together.
template <typename Options>
auto Substitutions(Options& o) {
  auto& s = o.substitutions;
  return std::vector{&s.fuse_attention, &s.merge_linears, &s.regroup_convolutions, &s.fold_conv_relu,
                     &s.prepack_onednn, &s.channels_last_pools};
}

// Long function: the table itself, one entry per option, in the order the docs list them.
std::vector<OptionSpec> MakeTable() {
  std::vector<OptionSpec> t;
  t.push_back(Option<std::string>(
      "method", "all", "the scheduler: autograph (the product); sequential, greedy, nimble, ios are baselines",
      [](auto& o) -> auto& { return o.search.method; }, std::nullopt, std::nullopt,
      {"autograph", "sequential", "greedy", "nimble", "ios"}));
  OptionSpec device;
  device.name = "device";
  device.type = "str";
  device.applies = "all";
  device.help = "where to plan and run: cpu, cuda or cuda:N";
  device.default_note = "the example inputs' device";
  device.set = [](OptimizeOptions& o, const nlohmann::json& v) {
    const std::string text = v.get<std::string>();
    try {
      o.executor.device = c10::Device(text);
    } catch (const c10::Error&) {
      throw InputError("is not a device: \"" + text + "\" (cpu, cuda or cuda:N)");
    }
    if (!o.executor.device.is_cpu() && !o.executor.device.is_cuda())
      throw InputError("is " + text + ", a device autograph does not plan for (cpu, cuda or cuda:N)");
  };
  device.get = [](const OptimizeOptions& o) { return nlohmann::json(o.executor.device.str()); };
  t.push_back(std::move(device));
  OptionSpec shapes;
  shapes.name = "shapes";
  shapes.type = "str";
  shapes.applies = "all";
  shapes.help = "more input shapes to plan for, one plan each; a call runs its shapes' plan, else (TorchScript) "
                "the nearest one's or (export, dynamic dims) the program's graph "
                "(1x128,1x128;8x512,8x512: shapes by ';', a shape's tensors by ',')";
  shapes.default_note = "none: one schedule, for the example inputs' shapes";
  shapes.set = [](OptimizeOptions& o, const nlohmann::json& v) { o.shapes = ParseShapes(v.get<std::string>()); };
  shapes.get = [](const OptimizeOptions& o) { return nlohmann::json(ShapesText(o.shapes)); };  // "": none
  t.push_back(std::move(shapes));
  t.push_back(Option<int>("plan_new_shapes", "TorchScript path",
                          "shapes calls bring beyond those planned: up to this many are planned at their first call "
                          "(it waits for the search) and saved with the module; 0: they run the nearest plan",
                          [](auto& o) -> auto& { return o.plan_new_shapes; }, 0, 64));
  t.push_back(Option<int>("max_streams", "all but sequential", "most groups (CUDA streams / CPU threads) per stage",
                          [](auto& o) -> auto& { return o.search.max_streams; }, 1, 64));
  t.push_back(Option<bool>("cuda_graph", "cuda", "replay the multi-stream run as a CUDA Graph",
                           [](auto& o) -> auto& { return o.executor.cuda_graph; }));
  t.push_back(Option<int>("max_cuda_graphs", "cuda",
                          "CUDA Graphs (input shapes) kept, least recently used released beyond it",
                          [](auto& o) -> auto& { return o.executor.max_cuda_graphs; }, 1, 4096));
  OptionSpec substitutions;
  substitutions.name = "substitutions";
  substitutions.type = "bool";
  substitutions.applies = "TorchScript path";
  substitutions.help = "the six rewrites below (fuse_attention ... channels_last_pools) on or off together";
  substitutions.set = [](OptimizeOptions& o, const nlohmann::json& v) {
    for (bool* on : Substitutions(o)) *on = v.get<bool>();
  };
  substitutions.get = [](const OptimizeOptions& o) {
    bool all = true;
    for (const bool* on : Substitutions(o)) all = all && *on;
    return nlohmann::json(all);
  };
  substitutions.default_note = "each rewrite's own switch (all on); set before them, whatever the order given";
  t.push_back(std::move(substitutions));
  t.push_back(Option<bool>("fuse_attention", "TorchScript path",
                           "matmul, scale, mask add, softmax, matmul become one scaled_dot_product_attention",
                           [](auto& o) -> auto& { return o.substitutions.fuse_attention; }));
  t.push_back(Option<bool>("merge_linears", "TorchScript path",
                           "linears that read one input (attention's Q, K, V) become one wider linear; with ios and "
                           "autograph and merge on, the search's merge stages decide instead",
                           [](auto& o) -> auto& { return o.substitutions.merge_linears; }));
  t.push_back(Option<bool>("regroup_convolutions", "TorchScript path",
                           "grouped convolutions run with fewer groups (block-diagonal weights) where timing says it pays",
                           [](auto& o) -> auto& { return o.substitutions.regroup_convolutions; }));
  t.push_back(Option<bool>("fold_conv_relu", "TorchScript path, cuda",
                           "conv + relu and conv + residual add + relu become one cuDNN fused kernel",
                           [](auto& o) -> auto& { return o.substitutions.fold_conv_relu; }));
  t.push_back(Option<bool>("prepack_onednn", "TorchScript path, cpu",
                           "convolutions on prepacked oneDNN weights (as jit_frozen); linears on weights packed "
                           "for MKL's or oneDNN's GEMM, whichever measures faster",
                           [](auto& o) -> auto& { return o.substitutions.prepack_onednn; }));
  t.push_back(Option<bool>("channels_last_pools", "TorchScript path, cpu",
                           "2-d max / avg pooling runs on a channels-last copy of its input",
                           [](auto& o) -> auto& { return o.substitutions.channels_last_pools; }));
  t.push_back(Option<bool>("stitch", "TorchScript path",
                           "memory-bound operators (elementwise, softmax, layer norm, ...) planned into stitched kernels",
                           [](auto& o) -> auto& { return o.substitutions.stitch; }));
  t.push_back(Option<bool>("inductor", "export path",
                           "the kept plan's parts, and the whole graph as one part, compiled by Inductor (AOTInductor "
                           "packages, weights frozen); kept where the whole program measures faster",
                           [](auto& o) -> auto& { return o.substitutions.inductor; }));
  t.push_back(Option<bool>("openvino", "export path, cpu",
                           "the whole graph compiled by OpenVINO's CPU plugin is one more candidate, kept where the "
                           "whole program measures faster (needs the openvino package and libautograph_openvino.so)",
                           [](auto& o) -> auto& { return o.substitutions.openvino; }));
  t.push_back(Option<bool>("onnxruntime", "export path, cpu",
                           "the whole graph and its parts compiled by ONNX Runtime's CPU provider are more candidates, "
                           "kept where the whole program measures faster, part by part beside the other compilers' "
                           "parts where that mix is faster (needs the onnxruntime package and "
                           "libautograph_onnxruntime.so)",
                           [](auto& o) -> auto& { return o.substitutions.onnxruntime; }));
  t.push_back(Option<std::string>(
      "precision", "all",
      "the lowest precision a candidate may compute in: fp32 (float32 as the process's switches say), tf32 (each "
      "candidate once more with float32 matmuls and convolutions in TF32, on CUDA), bf16 (OpenVINO's candidate "
      "with bfloat16 inference precision on a CPU that computes bf16 (AVX-512 or bf16 instructions), lowered part "
      "by part where its whole graph misses the tolerance; Inductor's whole graph with its matmuls and convolutions "
      "in bfloat16, as autocast, on CUDA or such a CPU; the plan on ATen's kernels in bfloat16 on CUDA), fp16 (the same two in float16, on CUDA) or int8 "
      "(export path, CPU: OpenVINO's candidates quantized by NNCF on the calibration inputs, at least 8 of them, "
      "aimed at option accuracy, lowered part by part (int8, else bf16) where the whole graph misses the tolerance; "
      "ONNX Runtime's whole graph by its static quantization, aimed at option accuracy too; bf16's candidates "
      "compete too); a lowered "
      "candidate is kept only where its outputs stay within "
      "tolerance of float32's and it measures faster (on the export path, at least 3% faster than the fastest float32 candidate); "
      "inputs and outputs keep their dtypes; below tf32, tf32's "
      "candidates compete too. On the TorchScript path: tf32 (its planned program once more in TF32, on CUDA); bf16 (CUDA, a CPU "
      "with bf16 instructions) and fp16 (CUDA): the graph planned once more with its matmuls and convolutions "
      "lowered, all of them or the runs of them that keep the tolerance",
      [](auto& o) -> auto& { return o.numerics.precision; }, std::nullopt, std::nullopt, {"fp32", "tf32", "bf16", "fp16", "int8"}));
  t.push_back(Option<double>("tolerance", "all",
                             "the largest error a lowered candidate may have on the example inputs and "
                             "optimize's calibration inputs, by option accuracy (max_error: per output, relative to "
                             "the float32 output's largest magnitude)",
                             [](auto& o) -> auto& { return o.numerics.tolerance; }, 0.0, 1.0));
  t.push_back(Option<std::string>(
      "accuracy", "all",
      "how a lowered candidate's outputs are judged against float32's, each a loss that option tolerance bounds: "
      "max_error (the largest difference relative to each output's largest magnitude, on every judged input), "
      "top1 (the share of rows, over all judged inputs, whose largest entry along the last dimension moved: "
      "a classifier's answers that changed), cosine (1 - the cosine similarity of each output with float32's, the "
      "worst input), sqnr (the noise-to-signal power ratio, 10^(-SQNR/10): 0.001 is 30 dB, the worst input); "
      "from Python also a function of (outputs, float32 outputs) giving a score, whose drop tolerance bounds "
      "(export path)",
      [](auto& o) -> auto& { return o.numerics.accuracy; }, std::nullopt, std::nullopt, AccuracyMeasures()));
  t.push_back(Option<bool>("check_rewrites", "all",
                           "each rewrite (and Inductor candidate) is timed on the whole graph and kept only if faster",
                           [](auto& o) -> auto& { return o.substitutions.check_rewrites; }));
  t.push_back(Option<bool>("merge", "ios, autograph",
                           "sibling convolutions / linears may become one merged kernel (a Merge stage)",
                           [](auto& o) -> auto& { return o.search.merge; }));
  t.push_back(Option<double>("alpha", "autograph", "weight of the critical path in the mixed cost",
                             [](auto& o) -> auto& { return o.search.alpha; }, 0.0));
  t.push_back(Option<int>("block_ops", "autograph", "most operators per block of the partition",
                          [](auto& o) -> auto& { return o.search.block_ops; }, 1, 64));
  t.push_back(Option<int64_t>("block_states", "autograph",
                              "most states (predecessor-closed subsets) per block; 0 = no bound",
                              [](auto& o) -> auto& { return o.search.block_states; }, 0));
  t.push_back(Option<int>("r", "autograph", "most operators per group",
                          [](auto& o) -> auto& { return o.search.autograph_r; }, 1, 64));
  t.push_back(Option<int64_t>("budget", "autograph", "states per block searched with full backtracking",
                              [](auto& o) -> auto& { return o.search.budget; }, 0));
  t.push_back(WithNote(
      Option<double>("time_limit", "ios, autograph",
                     "seconds for the search, then blocks finish greedily; 0 = none",
                     [](auto& o) -> auto& { return o.search.time_limit; }),
      "60 with measured costs, none with analytical ones"));
  t.push_back(Option<int>("verify", "autograph",
                          "the search's best N candidates, the one-stream and Nimble's schedules run side by side on "
                          "the device; the fastest is kept (0: none run)",
                          [](auto& o) -> auto& { return o.search.verify; }, 0, 16));
  t.push_back(Option<int>("ios_r", "ios", "most operators per group",
                          [](auto& o) -> auto& { return o.search.ios_r; }, 1, 64));
  t.push_back(Option<int>("ios_s", "ios", "most groups per stage",
                          [](auto& o) -> auto& { return o.search.ios_s; }, 1, 64));
  t.push_back(Option<int>("ios_block", "ios", "operators per block (contiguous in topological order)",
                          [](auto& o) -> auto& { return o.search.ios_block; }, 1, 64));
  t.push_back(WithNote(Option<std::string>(
                           "cost", "ios, autograph",
                           "the cost model stages are ranked with: analytical (a roofline of device_model) or measured "
                           "(stages run for real on the device, cached on disk)",
                           [](auto& o) -> auto& { return o.cost.model; }, std::nullopt, std::nullopt,
                           {"", "analytical", "measured"}),
                       "measured on cuda, analytical on cpu"));
  t.push_back(WithNote(Option<std::string>(
                           "device_model", "analytical cost",
                           "h100, a100, v100, cpu, or a .json file that autograph calibrate wrote",
                           [](auto& o) -> auto& { return o.cost.device_model; }),
                       "this device's calibration if there is one, else h100 on cuda, cpu on cpu"));
  t.push_back(WithNote(Option<std::string>(
                           "cost_cache", "measured cost",
                           "the disk cache of stage times (a JSON file); none = no cache",
                           [](auto& o) -> auto& { return o.cost.cache; }),
                       "~/.cache/autograph/costs/ + the device id + .json"));
  return t;
}

std::string Number(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// Type, choices and bounds, as the table declares them.
void Check(const OptionSpec& spec, const nlohmann::json& v) {
  bool fits = false;
  if (spec.type == "bool") fits = v.is_boolean();
  else if (spec.type == "int") fits = v.is_number_integer();
  else if (spec.type == "float") fits = v.is_number();
  else fits = v.is_string();
  if (!fits) throw InputError("has the wrong type: " + v.dump() + " (expected " + spec.type + ")");
  if (!spec.choices.empty()) {
    const std::string s = v.get<std::string>();
    std::string listed;
    bool known = false;
    for (const std::string& c : spec.choices) {
      known = known || c == s;
      if (!c.empty()) listed += (listed.empty() ? "" : ", ") + c;
    }
    if (!known) throw InputError("is \"" + s + "\"; use one of " + listed);
  }
  if (spec.type == "int" || spec.type == "float") {
    const double x = v.get<double>();
    if (!std::isfinite(x) || (spec.min && x < *spec.min) || (spec.max && x > *spec.max))
      throw InputError("is " + v.dump() + "; expected " +
                       (spec.min && spec.max ? Number(*spec.min) + ".." + Number(*spec.max)
                                             : spec.min ? "at least " + Number(*spec.min) : "at most " + Number(*spec.max)));
  }
}

}  // namespace

const std::vector<OptionSpec>& OptimizeOptionTable() {
  static const std::vector<OptionSpec> table = MakeTable();
  return table;
}

nlohmann::json OptimizeOptionsToJson(const OptimizeOptions& options) {
  const OptimizeOptions defaults;
  nlohmann::json result = nlohmann::json::object();
  for (const OptionSpec& spec : OptimizeOptionTable()) {
    // shapes: a plan made from these options is for other shapes; substitutions: a summary of the six
    // switches, each written on its own (written too, it would set them all before them).
    if (spec.name == "shapes" || spec.name == "substitutions") continue;
    nlohmann::json value = spec.get(options);
    if (value != spec.get(defaults)) result[spec.name] = std::move(value);
  }
  return result;
}

std::vector<std::string> OptimizeOptionKeys() {
  std::vector<std::string> keys;
  for (const OptionSpec& spec : OptimizeOptionTable()) keys.push_back(spec.name);
  return keys;
}

OptimizeOptions OptimizeOptionsFromJson(const nlohmann::json& options) {
  if (!options.is_object()) throw InputError("options must be a JSON object of name: value, got " + options.dump());
  OptimizeOptions result;
  // "substitutions" first: it sets the six rewrites, which the same options may then set one by one.
  std::vector<std::pair<std::string, nlohmann::json>> items;
  for (const auto& [key, value] : options.items()) items.emplace(key == "substitutions" ? items.begin() : items.end(), key, value);
  for (const auto& [key, value] : items) {
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : OptimizeOptionTable())
      if (s.name == key) spec = &s;
    if (!spec) {
      std::string known;
      for (const std::string& k : OptimizeOptionKeys()) known += (known.empty() ? "" : ", ") + k;
      throw InputError("unknown option '" + key + "'; the options are: " + known);
    }
    try {
      Check(*spec, value);
      spec->set(result, value);
    } catch (const InputError& e) {
      throw InputError("option '" + key + "' " + e.what());
    }
  }
  return result;
}

void CheckOptimizeOptions(const OptimizeOptions& options) {
  for (const OptionSpec& spec : OptimizeOptionTable()) {
    const nlohmann::json value = spec.get(options);
    try {
      Check(spec, value);
      OptimizeOptions scratch;
      spec.set(scratch, value);  // what only the setter checks (a device autograph plans for)
    } catch (const InputError& e) {
      throw InputError("option '" + spec.name + "' " + e.what());
    }
  }
}

namespace {

const char* PathName(ModelPath path) { return path == ModelPath::TorchScript ? "TorchScript path" : "export path"; }

// What `path` optimizes, and how each entry point takes a model there.
const char* WhatTakes(ModelPath path) {
  return path == ModelPath::TorchScript
             ? "a TorchScript module (Python: autograph.optimize(model, inputs) without ir=\"export\"; the command "
               "line: a .pt model)"
             : "a torch.export program (Python: an ExportedProgram, or ir=\"export\"; the command line: a .pt2 model)";
}

}  // namespace

bool AppliesOn(const OptionSpec& spec, ModelPath path) {
  std::stringstream items(spec.applies);
  bool names_a_path = false, names_this_path = false;
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    for (ModelPath p : {ModelPath::TorchScript, ModelPath::Export}) {
      if (item != PathName(p)) continue;
      names_a_path = true;
      names_this_path = names_this_path || p == path;
    }
  }
  return !names_a_path || names_this_path;
}

void CheckOptionsApplyOn(const std::vector<std::string>& set, ModelPath path) {
  const ModelPath other = path == ModelPath::TorchScript ? ModelPath::Export : ModelPath::TorchScript;
  for (const std::string& name : set)
    for (const OptionSpec& spec : OptimizeOptionTable())
      if (spec.name == name && !AppliesOn(spec, path))
        throw InputError("option '" + name + "' applies to the " + PathName(other) + " (\"" + spec.applies +
                         "\"), not the " + PathName(path) + " this model takes: drop it here. The " +
                         PathName(other) + " optimizes " + WhatTakes(other));
}

std::vector<std::string> OptionKeysOf(const nlohmann::json& options) {
  std::vector<std::string> keys;
  if (options.is_object())
    for (const auto& item : options.items()) keys.push_back(item.key());
  return keys;
}

std::vector<std::string> OptionsSetIn(const OptimizeOptions& options) {
  const OptimizeOptions defaults;
  std::vector<std::string> set;
  for (const OptionSpec& spec : OptimizeOptionTable())
    if (spec.name != "substitutions" && spec.get(options) != spec.get(defaults)) set.push_back(spec.name);
  return set;
}

nlohmann::json OptimizeOptionTableJson() {
  const OptimizeOptions defaults;
  nlohmann::json table = nlohmann::json::array();
  for (const OptionSpec& spec : OptimizeOptionTable()) {
    nlohmann::json entry = {{"name", spec.name}, {"type", spec.type}, {"default", spec.get(defaults)},
                            {"applies", spec.applies}, {"help", spec.help}};
    if (!spec.default_note.empty()) entry["default_note"] = spec.default_note;
    if (!spec.choices.empty()) entry["choices"] = spec.choices;
    if (spec.min) entry["min"] = *spec.min;
    if (spec.max) entry["max"] = *spec.max;
    table.push_back(std::move(entry));
  }
  return table;
}

std::string ShapesText(const std::vector<std::vector<std::vector<int64_t>>>& shapes) {
  std::string text;
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (s) text += ';';
    for (size_t t = 0; t < shapes[s].size(); ++t) {
      if (t) text += ',';
      for (size_t d = 0; d < shapes[s][t].size(); ++d) text += (d ? "x" : "") + std::to_string(shapes[s][t][d]);
    }
  }
  return text;
}

}  // namespace autograph
