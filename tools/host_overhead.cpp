// Host cost per operator: a chain of N additions on 1-element CPU tensors, where the kernels cost
// almost nothing, run (a) as direct at::add calls, (b) by the TorchScript interpreter, (c) by
// autograph's sequential executor and (d) by its stage executor (4 chains side by side, 4 groups
// per stage). (b)-(d) minus (a) is what each executor adds per operator.
#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>

#include "commands.h"
#include "executor/sequential_executor.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "search/simple_schedulers.h"

namespace autograph::cli {

namespace {

std::shared_ptr<torch::jit::Graph> ChainsOfAdds(int chains, int length) {
  std::ostringstream ir;
  ir << "graph(%x : Tensor):\n  %one : int = prim::Constant[value=1]()\n";
  for (int c = 0; c < chains; ++c)
    for (int i = 0; i < length; ++i)
      ir << "  %c" << c << "_" << i + 1 << " : Tensor = aten::add(" << (i ? "%c" + std::to_string(c) + "_" + std::to_string(i) : "%x")
         << ", %x, %one)\n";
  ir << "  %out : Tensor[] = prim::ListConstruct(";
  for (int c = 0; c < chains; ++c) ir << (c ? ", " : "") << "%c" << c << "_" << length;
  ir << ")\n  return (%out)\n";
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir.str(), graph.get());
  return graph;
}

template <typename F>
double MedianMicrosecondsPerOp(F&& run, int ops, int repeats = 15) {
  run();  // warm-up
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / ops);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

}  // namespace

std::string MeasureHostOverhead() {
  constexpr int kChains = 4, kLength = 500, kOps = kChains * kLength;
  torch::NoGradGuard no_grad;
  at::Tensor x = at::ones({1});
  auto graph = ChainsOfAdds(kChains, kLength);
  OpGraph ops = ImportOpGraph(graph, {x});

  double direct = MedianMicrosecondsPerOp(
      [&] {
        for (int c = 0; c < kChains; ++c) {
          at::Tensor y = x;
          for (int i = 0; i < kLength; ++i) y = at::add(y, x);
        }
      },
      kOps);
  torch::jit::Code code(graph, "chains");
  double interpreter = MedianMicrosecondsPerOp(
      [&] {
        torch::jit::Stack stack{x};
        torch::jit::InterpreterState(code).run(stack);
      },
      kOps);
  SequentialExecutor sequential(ops);
  double ours_sequential = MedianMicrosecondsPerOp([&] { sequential.Run({x}); }, kOps);
  StageExecutor staged(ops, GreedySchedule(ops, kChains));
  double ours_staged = MedianMicrosecondsPerOp([&] { staged.Run({x}); }, kOps);

  std::ostringstream md;
  md << std::fixed << std::setprecision(2)
     << "| executor (CPU, " << kChains << " chains x " << kLength << " adds of 1 element) | us per operator | over direct |\n"
     << "|---|---:|---:|\n"
     << "| direct at::add calls | " << direct << " | - |\n"
     << "| TorchScript interpreter | " << interpreter << " | " << interpreter - direct << " |\n"
     << "| autograph sequential executor | " << ours_sequential << " | " << ours_sequential - direct << " |\n"
     << "| autograph stage executor (" << staged.plan().stages.size() << " stages x " << kChains << " groups, threads) | "
     << ours_staged << " | " << ours_staged - direct << " |\n";
  return md.str();
}

}  // namespace autograph::cli
