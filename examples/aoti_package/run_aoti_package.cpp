// Runs a model optimized by autograph from C++ with no Python and no TorchScript: the AOTInductor
// package (make_package.py writes it) is loaded with torch::inductor::AOTIModelPackageLoader after
// autograph's library, which registers the operators the package calls (autograph::execute, which
// runs autograph's plan, and autograph::run_inductor_part, the Inductor-compiled parts inside it).
//
//   run_aoti_package <libautograph.so> <model.pt2> <input.bin> <expected.bin> <dim>...
//
// input.bin / expected.bin: raw float32 (the one input of shape <dim>..., the expected output).
// Prints the error relative to the output's scale and the median time; exits 1 when outputs differ.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
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
  if (t.numel() != n) throw std::runtime_error(path + " holds " + std::to_string(n) + " floats, the shape asks for " +
                                               std::to_string(t.numel()));
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.data_ptr()));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s <libautograph.so> <model.pt2> <input.bin> <expected.bin> <dim>...\n", argv[0]);
    return 2;
  }
  try {
    // The operators the package calls must be registered before it loads.
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) throw std::runtime_error(std::string("cannot load ") + dlerror());
    std::vector<int64_t> shape;
    for (int i = 5; i < argc; ++i) shape.push_back(std::stoll(argv[i]));
    const at::Tensor input = ReadFloats(argv[3], shape);
    const at::Tensor expected = ReadFloats(argv[4], {});
    c10::InferenceMode inference;
    torch::inductor::AOTIModelPackageLoader loader(argv[2]);
    std::vector<at::Tensor> outputs = loader.run({input});
    if (outputs.size() != 1 || outputs[0].numel() != expected.numel())
      throw std::runtime_error("the package returned " + std::to_string(outputs.size()) + " outputs of other sizes");
    const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
    const double error = (outputs[0].flatten() - expected).abs().max().item<double>() / scale;
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      const auto start = std::chrono::steady_clock::now();
      loader.run({input});
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    std::printf("output %s, max relative error %.1e, median %.3f ms\n", c10::str(outputs[0].sizes()).c_str(), error,
                ms[ms.size() / 2]);
    if (!(error <= 1e-4)) {
      std::fprintf(stderr, "run_aoti_package: outputs differ from the expected ones (relative error %.1e)\n", error);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_aoti_package: %s\n", e.what());
    return 2;
  }
}
