#pragma once
// AtenProgram: what an optimized exported program carries — its ATen graph, the operators and edges
// the search planned over, the schedule — as text, with no TorchScript to load or run it: operators
// are called through the c10 dispatcher, weights arrive as inputs (the exported program's own
// tensors), and the same StageExecutor as a TorchScript Program runs the schedule on CPU threads or
// CUDA streams. The text's first line is a header (format, digest of the rest, device, the outputs'
// metadata) that autograph::execute's fake implementation reads and its cache is keyed by.
#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "executor/executor_options.h"
#include "executor/stage_executor.h"

namespace autograph {

class AtenProgram {
 public:
  static constexpr int64_t kFormatVersion = 1;

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

  // Runs the schedule on the graph's inputs (weights first, then the user's tensors, as the exported
  // program's placeholders are ordered) and returns its outputs. Checks their number, devices, ranks
  // and dtypes (InputError); other sizes run with a one-time note. Thread-safe.
  std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs) const;

  const OpGraph& graph() const { return graph_; }
  const Schedule& schedule() const { return schedule_; }
  const ExecutorOptions& options() const { return options_; }

 private:
  OpGraph graph_;
  Schedule schedule_;
  ExecutorOptions options_;
  std::unique_ptr<StageExecutor> executor_;
  mutable std::once_flag other_shape_note_;
};

}  // namespace autograph
