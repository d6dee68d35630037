#include "autograph/error.h"

#include <c10/util/Exception.h>

namespace autograph {

std::string FirstLineOf(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
  // Some c10 messages start with a newline: skip those before taking the first line.
  size_t start = what.find_first_not_of('\n');
  what = start == std::string::npos ? "" : what.substr(start);
  return what.substr(0, what.find('\n'));
}

}  // namespace autograph
