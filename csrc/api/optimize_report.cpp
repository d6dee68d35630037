#include "autograph/optimize_report.h"

#include "api/timeline.h"
#include "core/schedule.h"

#include <nlohmann/json.hpp>

namespace autograph {

namespace {

nlohmann::json MsOrNull(double ms) { return ms >= 0 ? nlohmann::json(ms) : nlohmann::json(nullptr); }
nlohmann::json TextOrNull(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

nlohmann::json ErrorOrNull(double error) { return error >= 0 ? nlohmann::json(error) : nlohmann::json(nullptr); }  // NaN too

nlohmann::json PrecisionJson(const PrecisionDecision& p) {
  nlohmann::json parts = nlohmann::json::array();
  for (const PrecisionPart& part : p.parts)
    parts.push_back({{"operators", part.operators},
                     {"flops", part.flops},
                     {"precision", part.precision},
                     {"error", ErrorOrNull(part.error)}});
  nlohmann::json judged = nlohmann::json::array();
  for (double value : p.judged) judged.push_back(ErrorOrNull(value));
  return {{"asked", p.asked},
          {"tolerance", p.tolerance},
          {"accuracy", p.accuracy},
          {"judged", judged},
          {"kept", p.kept},
          {"error", ErrorOrNull(p.error)},
          {"fp32_ms", MsOrNull(p.fp32_ms)},
          {"lowered_ms", MsOrNull(p.lowered_ms)},
          {"calibration_inputs", p.calibration_inputs},
          {"judged_inputs", 1 + p.calibration_inputs},  // the example's and the calibration inputs, as the export path's
          {"note", TextOrNull(p.note)},
          {"parts", parts}};
}

}  // namespace

nlohmann::json ReportToJson(const OptimizeReport& report) {
  nlohmann::json candidates = nlohmann::json::array(), rewrites = nlohmann::json::array();
  for (const CandidateTiming& c : report.candidates)
    candidates.push_back({{"name", c.name},
                          {"predicted_ms", MsOrNull(c.predicted_ms)},
                          {"measured_ms", c.measured_ms},
                          {"median_ms", c.median_ms},
                          {"p90_ms", c.p90_ms},
                          {"kept", c.name == report.chosen}});
  for (const RewriteDecision& r : report.rewrites)
    rewrites.push_back({{"name", r.name},
                        {"changes", r.changes},
                        {"rejected", r.rejected},
                        {"without_ms", MsOrNull(r.without_ms)},
                        {"with_ms", MsOrNull(r.with_ms)},
                        {"kept", r.kept}});
  nlohmann::json shape_plans = nlohmann::json::array();
  for (const ShapePlan& p : report.shape_plans)
    shape_plans.push_back({{"shapes", p.shapes},
                           {"stages", p.stages},
                           {"streams", p.streams},
                           {"predicted_ms", MsOrNull(p.predicted_ms)},
                           {"measured_ms", MsOrNull(p.measured_ms)},
                           {"skipped", TextOrNull(p.skipped)}});
  const nlohmann::json precision = report.precision ? PrecisionJson(*report.precision) : nlohmann::json(nullptr);
  nlohmann::json left = nlohmann::json::array();
  for (const TorchScriptPart& part : report.left_to_torchscript)
    left.push_back({{"op", part.op}, {"reason", part.reason}, {"count", part.count}});
  return {{"method", report.method},
          {"fallback", TextOrNull(report.fallback)},
          {"operators_optimized", report.operators_optimized},
          {"left_to_torchscript", left},
          {"device", TextOrNull(report.device)},
          {"cost", TextOrNull(report.cost)},
          {"operators_before", report.operators_before},
          {"operators_after", report.operators_after},
          {"stages", report.stages},
          {"groups", report.groups},
          {"streams", report.streams},
          {"predicted_ms", MsOrNull(report.predicted_ms)},
          {"measured_ms", MsOrNull(report.measured_ms)},
          {"search_seconds", report.search_seconds},
          {"states_explored", report.states_explored},
          {"stages_evaluated", report.stages_evaluated},
          {"stages_measured", report.stages_measured},
          {"cost_cache_hits", report.cost_cache_hits},
          {"candidates_verified", report.candidates_verified},
          {"chosen", TextOrNull(report.chosen)},
          {"candidates", candidates},
          {"rewrites", rewrites},
          {"rewrite_seconds", report.rewrite_seconds},
          {"blocks_over_budget", report.blocks_over_budget},
          {"linears_merged", report.linears_merged},
          {"convolutions_regrouped", report.convolutions_regrouped},
          {"convolutions_folded", report.convolutions_folded},
          {"ops_folded", report.ops_folded},
          {"attentions_fused", report.attentions_fused},
          {"ops_lowered", report.ops_lowered},
          {"ops_prepacked", report.ops_prepacked},
          {"pools_channels_last", report.pools_channels_last},
          {"stitch_groups", report.stitch_groups},
          {"ops_stitched", report.ops_stitched},
          {"memory_bound_before", report.memory_bound_before},
          {"memory_bound_after", report.memory_bound_after},
          {"schedule", ScheduleToJson(report.schedule)},
          {"shape_plans", shape_plans},
          {"precision", precision},
          {"timeline", report.timeline.stages.empty() ? nlohmann::json(nullptr) : TimelineToJson(report.timeline)}};
}

}  // namespace autograph
