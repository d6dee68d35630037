// libFuzzer target: stitch-program text. Anything is parsed or rejected with InputError; what
// parses prints back to text that parses to the same text (ToString's contract).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "autograph/error.h"
#include "stitch/stitch_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  autograph::StitchProgram program;
  try {
    program = autograph::ParseStitchProgram(text);
  } catch (const autograph::InputError&) {
    return 0;
  }
  const std::string printed = program.ToString();
  if (autograph::ParseStitchProgram(printed).ToString() != printed) std::abort();  // round trip broke
  return 0;
}
