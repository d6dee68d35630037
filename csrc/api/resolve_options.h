#pragma once
// The options a driver works with, checked and resolved once at its top: every value checked
// against the option table (an InputError naming it before any work, also for C++ callers that
// filled the struct by hand), and what the defaults leave to the device decided here — the cost
// model (measured on CUDA, analytical on CPU), the device model (this device's calibration, else
// the preset), CUDA Graphs only on CUDA — so that no later stage works them out again.
#include "autograph/optimize_options.h"

namespace autograph {

OptimizeOptions ResolveOptions(const OptimizeOptions& requested);

// The schedulers, by the names the option `method` takes.
enum class Method { Sequential, Greedy, Nimble, Ios, Autograph };

// The method options.search.method names; InputError for a name the option table does not list.
Method MethodOf(const OptimizeOptions& options);

// Whether the method searches over a cost model (and may plan Merge stages).
inline bool Searches(Method method) { return method == Method::Ios || method == Method::Autograph; }

}  // namespace autograph
