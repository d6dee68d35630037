#pragma once
// The options a driver works with, checked and resolved once at its top: every value checked
// against the option table (an InputError naming it before any work, also for C++ callers that
// filled the struct by hand), and what the defaults leave to the device decided here — the cost
// model (measured on CUDA, analytical on CPU), the device model (this device's calibration, else
// the preset), CUDA Graphs only on CUDA — so that no later stage works them out again. An option
// set for the other path (`applies`: "export path", "TorchScript path, cpu", ...) is an InputError
// too, not ignored; one set for another device is ignored, as the table documents (cuda_graph on the CPU).
#include "api/option_table.h"
#include "autograph/optimize_options.h"

namespace autograph {

// `path`: the path of the driver that calls it. A struct does not record which fields its caller
// wrote: an option counts as set here when it differs from its default (OptionsSetIn). The entry
// points that read options by name (the Python ops, the CLI) check the names given first
// (CheckOptionsApplyOn(OptionKeysOf(json), path)), so that an option given at its default value is
// refused there too.
OptimizeOptions ResolveOptions(const OptimizeOptions& requested, ModelPath path);

// The schedulers, by the names the option `method` takes.
enum class Method { Sequential, Greedy, Nimble, Ios, Autograph };

// The method options.search.method names; InputError for a name the option table does not list.
Method MethodOf(const OptimizeOptions& options);

// Whether the method searches over a cost model (and may plan Merge stages).
inline bool Searches(Method method) { return method == Method::Ios || method == Method::Autograph; }

}  // namespace autograph
