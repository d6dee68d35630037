#pragma once
// How autograph's operators hand its errors to PyTorch: an InputError becomes a ValueError in Python
// (TORCH_CHECK_VALUE), any other autograph::Error a RuntimeError, both "autograph: " and the message.
#include <c10/util/Exception.h>

#include <utility>

#include "autograph/error.h"

namespace autograph {

template <typename Body>
auto WithTorchErrors(Body&& body) -> decltype(body()) {
  try {
    return std::forward<Body>(body)();
  } catch (const InputError& e) {
    TORCH_CHECK_VALUE(false, "autograph: ", e.what());
  } catch (const Error& e) {
    TORCH_CHECK(false, "autograph: ", e.what());
  }
}

}  // namespace autograph
