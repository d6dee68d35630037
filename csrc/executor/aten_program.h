#pragma once
// AtenProgram: what an optimized exported program carries — its ATen graph, the operators and edges
// the search planned over, the schedule — as text, with no TorchScript to load or run it: operators
// are called through the c10 dispatcher, weights arrive as inputs (the exported program's own
// tensors), and the same StageExecutor as a TorchScript Program runs the schedule on CPU threads or
// CUDA streams. The text's first line is a header (format, digest of the rest, device, the outputs'
// metadata) that autograph::execute's fake implementation reads and its cache is keyed by.
//
// A plan with Merge stages builds its merged weights from the program's weights, which arrive with
// each run: on its first run, and again whenever other weight tensors come (or the same ones were
// written in place since), keeping the last few sets bound.
//
// A program exported with dynamic shapes is planned for one shape (its example's) and carries the
// original graph beside the plan, with its sizes computed by the graph (sym_size, autograph::scalar_op):
// inputs of the planned shape run the plan, others run that graph operator by operator. Such a
// program (format version 2, header "dynamic": true) takes the original's weights that the plan no
// longer reads (frozen into compiled parts) after the user's tensors.
#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "executor/compiled_graph.h"
#include "executor/packed_weights.h"
#include "autograph/executor_options.h"
#include "executor/stage_executor.h"

namespace autograph {

class AtenProgram {
 public:
  static constexpr int64_t kFormatVersion = 1;         // a program planned for one shape
  static constexpr int64_t kDynamicFormatVersion = 2;  // with the graph for other shapes beside it
  static constexpr int64_t kShapePlansFormatVersion = 3;  // and plans for further shapes

  // `graph` is over an AtenGraph (graph.aten_graph()); the schedule must validate against it (the
  // StageExecutor checks: ScheduleError).
  AtenProgram(OpGraph graph, Schedule schedule, ExecutorOptions options);

  // header line, '\n', body (both JSON).
  std::string ToText() const;
  // Throws Error naming what is wrong: not a program, another format version, a digest that does not
  // match (a truncated or edited text), a graph or schedule that does not validate, an operator that
  // is not registered (UnsupportedModelError).
  static std::shared_ptr<const AtenProgram> FromText(const std::string& text);
  // FromText once per distinct text in this process, so a call costs a lookup (by header, which holds
  // the body's digest) and a comparison of the text, not a parse. Thread-safe.
  static std::shared_ptr<const AtenProgram> Cached(std::string_view text);
  // `text` with `graph` (AtenGraph JSON: the program's graph for any shape) beside its plan; the
  // graph's k-th input is the run's input at `positions[k]` (the plan's inputs first, then extra
  // weights). With `run_graph` (e.g. one package compiled by Inductor for every shape) other shapes
  // run that graph, fed by `run_positions`, and `graph` only describes them (its sizes are what
  // export traces); a weight it reads then needs no position (-1). Validates the result as FromText does.
  static std::string WithGraphForOtherShapes(const std::string& text, const std::string& graph,
                                             const std::vector<int>& positions, const std::string& run_graph = "",
                                             const std::vector<int>& run_positions = {});

  // `text` (a program with a graph for other shapes) with `plan` (the text of a program of format 1,
  // planned for one more shape of the same exported program) beside it: inputs whose user tensors have
  // exactly the plan's shapes run it, fed by `positions` (per plan input: its index among Run's inputs;
  // the plan's user tensors are the program's, its weights may be any, past the end too). Validates the
  // result as FromText does.
  static std::string WithPlanForShape(const std::string& text, const std::string& plan, const std::vector<int>& positions);

  // `text` whose plan computes its float32 matmuls and convolutions in TF32 on CUDA
  // (ExecutorOptions::tf32; not its plans for further shapes, which carry their own, nor its graph for
  // other shapes). Validates as FromText does.
  static std::string WithTf32(const std::string& text);

  // `text` taking its small weights packed (PackedWeights; `packing` is its JSON): Run then takes the
  // packed call's tensors as well as the unpacked ones. Validates as FromText does.
  static std::string WithPackedWeights(const std::string& text, const std::string& packing);

  // Runs the schedule on the graph's inputs (weights first, then the user's tensors, as the exported
  // program's placeholders are ordered) and returns its outputs. Checks their number, devices, ranks
  // and dtypes (InputError); a packed program's packed call (PackedWeights) is unpacked first; other sizes run the graph for other shapes when the program has one,
  // else the plan with a one-time note. Thread-safe.
  std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs) const;

  const OpGraph& graph() const { return graph_; }
  const Schedule& schedule() const { return schedule_; }
  const ExecutorOptions& options() const { return options_; }
  bool dynamic() const { return other_shapes_ != nullptr; }
  size_t shape_plans() const { return shape_plans_.size(); }

 private:
  struct OtherShapes {
    std::shared_ptr<const AtenGraph> graph;
    std::vector<int> positions;  // per graph input: its index among Run's inputs (-1: not passed)
    std::shared_ptr<const AtenGraph> run_graph;  // what runs instead of `graph`, when set
    std::vector<int> run_positions;
    std::unique_ptr<CompiledGraph> compiled;     // of run_graph, else of graph
    std::vector<bool> restride;  // per output: the plan returns other strides than the graph
    // Per output: its dims outermost first, by the graph's strides (what a shape plan's outputs follow).
    std::vector<std::vector<int64_t>> stride_order;
    std::string source;          // the JSON it came from, written back as it was (the fake kernel reads it)
  };
  void SetOtherShapes(std::shared_ptr<const AtenGraph> graph, std::vector<int> positions,
                      std::shared_ptr<const AtenGraph> run_graph, std::vector<int> run_positions, std::string source);
  std::vector<at::Tensor> RunOtherShapes(const std::vector<at::Tensor>& inputs) const;
  // Run on the inputs unpacked; `shift`: how many places later the user's tensors are here than in the
  // caller's call (what errors name them by).
  std::vector<at::Tensor> RunUnpacked(const std::vector<at::Tensor>& inputs, size_t shift) const;
  struct ShapePlan {
    std::shared_ptr<const AtenProgram> program;
    std::vector<int> positions;  // per plan input: its index among Run's inputs
    std::string source;          // its text, written back as it was
  };
  void AddShapePlan(std::shared_ptr<const AtenProgram> plan, std::vector<int> positions, std::string source);
  // The plan made for exactly these inputs' shapes, or nullptr.
  const ShapePlan* ShapePlanFor(const std::vector<at::Tensor>& inputs) const;
  // `t` with the strides the graph for other shapes gives output `o` (dense, in its stride_order).
  at::Tensor Restrided(at::Tensor t, size_t o) const;

  OpGraph graph_;
  Schedule schedule_;
  ExecutorOptions options_;
  // The executor for these inputs: executor_, or with a Merge stage the one built on their weights.
  std::shared_ptr<const StageExecutor> ExecutorFor(const std::vector<at::Tensor>& inputs) const;

  std::shared_ptr<const StageExecutor> executor_;  // null when the plan merges: built per set of weights
  std::vector<int> merged_weights_;  // positions among the inputs of the weights merged kernels are built from
  struct BoundWeights {
    std::vector<at::Tensor> weights;  // held, so that their memory is not another tensor's while bound
    std::vector<int64_t> versions;
    std::shared_ptr<const StageExecutor> executor;
  };
  mutable std::mutex bound_mutex_;
  mutable std::vector<BoundWeights> bound_;  // most recently used first
  std::unique_ptr<OtherShapes> other_shapes_;
  std::vector<ShapePlan> shape_plans_;
  std::vector<bool> is_package_;  // per input: a compiled part's package (bytes its loader reads on the CPU)
  size_t num_inputs_ = 0;  // the plan's, plus the extra weights of other_shapes_ and shape_plans_
  std::shared_ptr<const PackedWeights> packed_;  // null: the weights come one by one
  mutable std::once_flag other_shape_note_;
};

}  // namespace autograph
