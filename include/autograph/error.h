#pragma once
// Typed errors of the public API. Each message says what went wrong, where, and what to do.
#include <exception>
#include <stdexcept>
#include <string>

namespace autograph {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The model file is missing, unreadable or not TorchScript.
class ModelLoadError : public Error {
 public:
  using Error::Error;
};

// Example inputs are missing, too many, or do not fit the model (shape, dtype).
class InputError : public Error {
 public:
  using Error::Error;
};

// The graph uses something autograph cannot lower or import.
class UnsupportedModelError : public Error {
 public:
  using Error::Error;
};

// The first line of an exception's message, without c10's backtrace: for quoting a library's error
// inside one of ours.
std::string FirstLineOf(const std::exception& e);

}  // namespace autograph
