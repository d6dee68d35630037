// MeasuredCostModel: runs each stage alone on the device, memoized by stage signature and kept in a
// disk cache; see measured_cost_model.h.
//
// In-place operators: a stage that writes one of its inputs in place (relu_, add_, ...) would mutate
// the recorded value on every repeat. Shapes and dtypes would not change, so neither would the
// kernels, but values could drift (add_ repeated grows them, mul_ towards denormals, which are slow
// on CPUs), and the next stage measured would read altered data. So every input that the stage may
// write (AliasDb) is fed as a fresh copy made before each run, outside the timed span. Values
// recorded before a later in-place write of the recording run itself saw that write; their shapes
// and dtypes are still right, which is all a timing needs.
#include "measure/measured_cost_model.h"

#include <ATen/core/grad_mode.h>

#include <functional>
#include <unordered_map>

#include "autograph/error.h"
#include "executor/run_timing.h"
#include "executor/stage_executor.h"
#include "measure/cost_cache.h"
#include "measure/extract_stage.h"
#include "measure/record_values.h"
#include "measure/stage_signature.h"
#include "search/cost/device_id.h"

namespace autograph {

struct MeasuredCostModel::Impl {
  MeasuredCostOptions options;
  const void* bound = nullptr;  // the TorchScript graph or AtenGraph: identifies the bound graph
  int num_ops = 0;
  ValueRecord values;             // a TorchScript graph's
  AtenValueRecord aten_values;    // an exported program's
  std::string device_id, device_key;  // device_key adds the settings that change kernel choice
  std::unordered_map<std::string, double> memo;  // full signature -> ms
  std::unique_ptr<CostCache> disk;
  int64_t measurements = 0, hits = 0;

  void CheckBound(const OpGraph& graph) const {
    if (Identity(graph) != bound || graph.size() != num_ops) {
      throw Error("this MeasuredCostModel is bound to the graph it was built with (" + std::to_string(num_ops) +
                  " operators) but was asked about another graph (" + std::to_string(graph.size()) +
                  " operators); build one MeasuredCostModel per graph, with that graph's example inputs");
    }
  }

  static const void* Identity(const OpGraph& graph) {
    return graph.aten_graph() ? static_cast<const void*>(graph.aten_graph().get())
                              : static_cast<const void*>(graph.graph().get());
  }
  std::string Signature(const OpGraph& graph, const Stage& stage) const {
    return graph.aten_graph() ? StageSignature(graph, stage, aten_values, device_key)
                              : StageSignature(graph, stage, values, device_key);
  }
  double Measure(const OpGraph& graph, const Stage& stage);
};

namespace {

std::string DescribeStage(const OpGraph& graph, const Stage& stage) {
  int ops = 0;
  for (const auto& group : stage.groups) ops += static_cast<int>(group.size());
  const int first = stage.groups.at(0).at(0);
  return "a " + std::string(stage.strategy == StageStrategy::Merge ? "merge" : "concurrent") + " stage of " +
         std::to_string(ops) + " operator(s) in " + std::to_string(stage.groups.size()) + " group(s), first " +
         std::to_string(first) + " (" + graph.node(first).op + ")";
}

}  // namespace

MeasuredCostModel::MeasuredCostModel(const OpGraph& graph, std::vector<c10::IValue> inputs, MeasuredCostOptions options)
    : impl_(std::make_unique<Impl>()) {
  Init(graph, std::move(options));
  at::NoGradGuard no_grad;
  if (graph.aten_graph()) {
    impl_->aten_values = RecordAtenValues(graph, std::move(inputs));
  } else {
    impl_->values = RecordValues(graph, std::move(inputs));
  }
}

MeasuredCostModel::MeasuredCostModel(const OpGraph& graph, const GraphValues& values, MeasuredCostOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!graph.graph() || values.graph() != graph.graph())
    throw Error("MeasuredCostModel: the recorded values are of another graph than the OpGraph's (internal error)");
  Init(graph, std::move(options));
  impl_->values = values.values();
}

void MeasuredCostModel::Init(const OpGraph& graph, MeasuredCostOptions options) {
  Impl& m = *impl_;
  if (options.repeats < 1)
    throw Error("MeasuredCostOptions.repeats is " + std::to_string(options.repeats) + "; expected at least 1");
  if (options.warmup < 0)
    throw Error("MeasuredCostOptions.warmup is " + std::to_string(options.warmup) + "; expected 0 or more");
  if (!(options.fastest_fraction > 0 && options.fastest_fraction <= 1))
    throw Error("MeasuredCostOptions.fastest_fraction is " + std::to_string(options.fastest_fraction) +
                "; expected a fraction in (0, 1]");
  m.options = std::move(options);
  m.bound = Impl::Identity(graph);
  m.num_ops = graph.size();
  m.device_id = DeviceId(m.options.device);
  std::string settings = DeviceSettings(m.options.device);
  if (m.options.device.is_cuda()) {  // the same stage times differently replayed or launched, flushed or warm
    settings += std::string(settings.empty() ? "" : " ") + (m.options.cuda_graph ? "graph" : "eager");
    if (m.options.flush_l2) settings += " l2-flushed";
  }
  m.device_key = settings.empty() ? m.device_id : m.device_id + " " + settings;
  std::string path = m.options.cache_path;
  if (path == "none") path.clear();
  else if (path.empty()) path = CostCache::DefaultPath(m.device_id);
  m.disk = std::make_unique<CostCache>(path, m.device_id);
}

MeasuredCostModel::~MeasuredCostModel() {
  try {
    Flush();
  } catch (...) {  // a destructor must not throw; Flush() reports errors to callers who want them
  }
}

std::string MeasuredCostModel::name() const { return "measured:" + impl_->device_id; }
const std::string& MeasuredCostModel::device_id() const { return impl_->device_id; }
const std::string& MeasuredCostModel::cache_path() const { return impl_->disk->path(); }
int64_t MeasuredCostModel::measurements() const { return impl_->measurements; }
int64_t MeasuredCostModel::cache_hits() const { return impl_->hits; }
void MeasuredCostModel::Flush() { impl_->disk->Flush(); }

double MeasuredCostModel::OperatorMs(const OpGraph& graph, int op) {
  impl_->CheckBound(graph);
  if (op < 0 || op >= graph.size())
    throw Error("operator " + std::to_string(op) + " is not in the graph (it has " + std::to_string(graph.size()) +
                " operators)");
  return StageMs(graph, Stage{StageStrategy::Concurrent, {{op}}});
}

double MeasuredCostModel::StageMs(const OpGraph& graph, const Stage& stage) {
  Impl& m = *impl_;
  m.CheckBound(graph);
  ValidateStage(graph, stage);
  const std::string signature = m.Signature(graph, stage);
  if (auto it = m.memo.find(signature); it != m.memo.end()) {
    ++m.hits;
    return it->second;
  }
  const std::string key = SignatureHash(signature);
  if (std::optional<double> ms = m.disk->Find(key)) {
    ++m.hits;
    m.memo.emplace(signature, *ms);
    return *ms;
  }
  const double ms = m.Measure(graph, stage);
  ++m.measurements;
  m.memo.emplace(signature, ms);
  m.disk->Insert(key, ms);
  return ms;
}

// Builds the stage's own executor, times it and drops it: the memo keeps the result, so the same
// stage is never built twice.
double MeasuredCostModel::Impl::Measure(const OpGraph& graph, const Stage& stage) {
  at::NoGradGuard no_grad;
  StageSubgraph sub = graph.aten_graph() ? ExtractStage(graph, stage, aten_values) : ExtractStage(graph, stage, values);
  try {
    const bool replayed = options.cuda_graph && options.device.is_cuda();  // as the program runs it
    StageExecutor executor(sub.graph, sub.schedule, ExecutorOptions{options.device, replayed});
    const bool flush = options.flush_l2 && options.device.is_cuda();
    std::function<void()> prepare, run;
    std::vector<c10::IValue> buffers, run_inputs;
    if (replayed) {
      // The graph runs on buffers of its own, captured once; inputs it writes in place are restored
      // from the recorded values before each replay (outside the timed span).
      for (const c10::IValue& v : sub.inputs) buffers.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
      run = executor.BindInputs(buffers);
      prepare = [&] {
        for (size_t i = 0; i < buffers.size(); ++i)
          if (sub.mutated[i] && buffers[i].isTensor()) buffers[i].toTensor().copy_(sub.inputs[i].toTensor());
      };
    } else {
      prepare = [&] {
        run_inputs = sub.inputs;
        for (size_t i = 0; i < run_inputs.size(); ++i)
          if (sub.mutated[i]) run_inputs[i] = sub.inputs[i].deepcopy();
      };
      run = [&] { executor.Run(std::move(run_inputs)); };
    }
    return RobustMs(TimeRuns(options.device, options.warmup, options.repeats, prepare, run, flush),
                    options.fastest_fraction);
  } catch (const ScheduleError&) {
    throw;
  } catch (const Error& e) {
    throw Error("measuring " + DescribeStage(graph, stage) + " on " + device_id + " failed: " + e.what());
  }
}

}  // namespace autograph
