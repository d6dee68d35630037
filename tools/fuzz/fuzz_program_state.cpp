// libFuzzer target: the Program's pickled state, as a saved optimized module carries it. The input
// is the state's graph IR and plan JSON separated by one NUL byte; the tensor constants are those of
// a real optimized module (AUTOGRAPH_FUZZ_MODULE, written by scripts/fuzz.sh), so that mutations of
// its IR and plan reach past the first checks. Program::FromState (parsing, constants and layouts,
// operators, merge candidates, the schedule's validation, building the executor) must load it or
// throw autograph::Error. Running a loaded program is left out: a mutated graph hands ATen's kernels
// arguments of any kind, which tests ATen, not autograph.
#include <torch/script.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "autograph/error.h"
#include "executor/program.h"

namespace {

const autograph::Program::State& SeedState() {
  static const autograph::Program::State seed = [] {
    const char* path = std::getenv("AUTOGRAPH_FUZZ_MODULE");
    if (!path) {
      std::cerr << "fuzz_program_state: set AUTOGRAPH_FUZZ_MODULE to an optimized module (scripts/fuzz.sh does)\n";
      std::abort();
    }
    return torch::jit::load(path).attr("program").toCustomClass<autograph::Program>()->ToState();
  }();
  return seed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t split = bytes.find('\0');
  if (split == std::string::npos) return 0;
  autograph::Program::State state(autograph::Program::kFormatVersion, bytes.substr(0, split),
                                  std::get<2>(SeedState()), bytes.substr(split + 1));
  try {
    autograph::Program::FromState(std::move(state));
  } catch (const autograph::Error&) {
  }
  return 0;
}
