#pragma once
// A timeline (timeline.h) as an SVG picture: time runs left to right, one row per stream, stages
// separated by thin lines and numbered above, each operator a box as wide as its time (a tooltip
// names it), merged and stitched kernels in colours of their own, a legend and a time axis below.
#include <string>

#include "api/timeline.h"

namespace autograph {

// `title`: the first line above the picture (e.g. the model and the method).
std::string TimelineSvg(const Timeline& timeline, const std::string& title);

}  // namespace autograph
