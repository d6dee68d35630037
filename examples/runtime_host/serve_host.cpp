// A serving process that knows nothing of autograph. It links LibTorch alone and loads a model the
// way a server does: torch::jit::load for a TorchScript file, AOTInductor's loader for a .pt2
// package. Triton's pytorch_libtorch and torch_aoti backends load models this way. The operators and
// classes of a model that autograph optimized come from libautograph_runtime.so, which the process
// is started with:
//
//   LD_PRELOAD=.../libautograph_runtime.so serve_host <model.pt|model.pt2> <input.bin> <expected.bin> <dim>...
//
// input.bin / expected.bin: raw float32 (the one input of shape <dim>..., the expected output).
// Prints the error relative to the output's scale and the median time. Exits 1 when the outputs
// differ and 2 when the model does not load or run. Without the runtime, a TorchScript model fails
// at load: its operators are unknown.
#include <c10/core/InferenceMode.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

at::Tensor ReadFloats(const std::string& path, std::vector<int64_t> shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const int64_t n = static_cast<int64_t>(bytes.size() / sizeof(float));
  if (shape.empty()) shape = {n};
  at::Tensor t = at::empty(shape, at::kFloat);
  if (t.numel() != n)
    throw std::runtime_error(path + " holds " + std::to_string(n) + " floats, the shape asks for " +
                             std::to_string(t.numel()));
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.data_ptr()));
  return t;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The model as a function of its one input, loaded as the server would.
std::function<at::Tensor(const at::Tensor&)> Load(const std::string& path) {
  if (EndsWith(path, ".pt2")) {
    auto loader = std::make_shared<torch::inductor::AOTIModelPackageLoader>(path);
    return [loader](const at::Tensor& x) { return loader->run({x}).at(0); };
  }
  auto module = std::make_shared<torch::jit::Module>(torch::jit::load(path));
  module->eval();
  return [module](const at::Tensor& x) {
    c10::IValue out = module->forward({x});
    return out.isTuple() ? out.toTupleRef().elements().at(0).toTensor() : out.toTensor();
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <model.pt|model.pt2> <input.bin> <expected.bin> <dim>...\n", argv[0]);
    return 2;
  }
  try {
    std::vector<int64_t> shape;
    for (int i = 4; i < argc; ++i) shape.push_back(std::stoll(argv[i]));
    const at::Tensor input = ReadFloats(argv[2], shape);
    const at::Tensor expected = ReadFloats(argv[3], {});
    const auto model = Load(argv[1]);
    c10::InferenceMode inference;
    const at::Tensor output = model(input);
    if (output.numel() != expected.numel())
      throw std::runtime_error("the output has " + std::to_string(output.numel()) + " elements, " +
                               std::to_string(expected.numel()) + " expected");
    const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
    const double error = (output.flatten() - expected).abs().max().item<double>() / scale;
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      const auto start = std::chrono::steady_clock::now();
      model(input);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    std::printf("output %s, max relative error %.1e, median %.3f ms\n", c10::str(output.sizes()).c_str(), error,
                ms[ms.size() / 2]);
    // Float32: the optimized model's stitched and merged kernels may sum in another order (squeezenet
    // on the CPU: 3e-7 of the output's scale), while a wrong kernel moves it by order 1.
    if (!(error <= 1e-3)) {
      std::fprintf(stderr, "serve_host: outputs differ from the expected ones (relative error %.1e)\n", error);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_host: %s\n", e.what());
    return 2;
  }
}
