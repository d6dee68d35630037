#include "api/timeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "autograph/error.h"
#include "search/cost/cost_model.h"

namespace autograph {

namespace {

OpKind KindFromString(const std::string& s) {
  if (std::optional<OpKind> kind = OpKindFromString(s)) return *kind;
  throw Error("timeline: unknown operator kind '" + s + "'");
}

}  // namespace

Timeline BuildTimeline(const OpGraph& graph, const Schedule& schedule, CostModel& cost) {
  Timeline timeline;
  timeline.times = "predicted by " + cost.name();
  timeline.streams = std::max(1, schedule.max_groups());
  double now = 0;
  for (const Stage& stage : schedule.stages) {
    TimelineStage out;
    out.merged = stage.strategy == StageStrategy::Merge;
    out.start_ms = now;
    out.ms = cost.StageMs(graph, stage);
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      TimelineSpan span;
      span.stream = out.merged ? stage.StreamOf(0) : stage.StreamOf(g);
      double at = now;
      for (int id : stage.groups[g]) {
        const OpNode& node = graph.node(id);
        if (node.kind == OpKind::View) continue;
        TimelineOp op;
        op.id = id;
        op.op = node.op;
        op.kind = node.kind;
        op.stitched = node.op == "autograph::stitched";
        if (!node.outputs.empty()) op.shape = ShapeString(node.outputs[0].shape);
        // A merged stage is one kernel: its operators share the stage's span.
        op.ms = out.merged ? out.ms : cost.OperatorMs(graph, id);
        op.start_ms = out.merged ? now : at;
        at += op.ms;
        span.ops.push_back(std::move(op));
      }
      if (!span.ops.empty()) out.spans.push_back(std::move(span));
    }
    now += out.ms;
    timeline.stages.push_back(std::move(out));
  }
  timeline.total_ms = now;
  return timeline;
}

nlohmann::json TimelineToJson(const Timeline& timeline) {
  nlohmann::json stages = nlohmann::json::array();
  for (const TimelineStage& stage : timeline.stages) {
    nlohmann::json spans = nlohmann::json::array();
    for (const TimelineSpan& span : stage.spans) {
      nlohmann::json ops = nlohmann::json::array();
      for (const TimelineOp& op : span.ops)
        ops.push_back({{"id", op.id}, {"op", op.op}, {"kind", ToString(op.kind)}, {"stitched", op.stitched},
                       {"shape", op.shape}, {"start_ms", op.start_ms}, {"ms", op.ms}});
      spans.push_back({{"stream", span.stream}, {"ops", std::move(ops)}});
    }
    stages.push_back({{"merged", stage.merged}, {"start_ms", stage.start_ms}, {"ms", stage.ms}, {"spans", std::move(spans)}});
  }
  return {{"times", timeline.times}, {"total_ms", timeline.total_ms}, {"streams", timeline.streams},
          {"stages", std::move(stages)}};
}

Timeline TimelineFromJson(const nlohmann::json& json) {
  try {
    Timeline timeline;
    timeline.times = json.at("times").get<std::string>();
    timeline.total_ms = json.at("total_ms").get<double>();
    timeline.streams = json.at("streams").get<int>();
    if (timeline.streams < 1 || timeline.streams > kMaxStreams)
      throw Error("timeline: " + std::to_string(timeline.streams) + " streams");
    for (const nlohmann::json& s : json.at("stages")) {
      TimelineStage stage;
      stage.merged = s.at("merged").get<bool>();
      stage.start_ms = s.at("start_ms").get<double>();
      stage.ms = s.at("ms").get<double>();
      for (const nlohmann::json& sp : s.at("spans")) {
        TimelineSpan span;
        span.stream = sp.at("stream").get<int>();
        if (span.stream < 0 || span.stream >= timeline.streams)
          throw Error("timeline: stream " + std::to_string(span.stream) + " of " + std::to_string(timeline.streams));
        for (const nlohmann::json& o : sp.at("ops")) {
          TimelineOp op;
          op.id = o.at("id").get<int>();
          op.op = o.at("op").get<std::string>();
          op.kind = KindFromString(o.at("kind").get<std::string>());
          op.stitched = o.at("stitched").get<bool>();
          op.shape = o.at("shape").get<std::string>();
          op.start_ms = o.at("start_ms").get<double>();
          op.ms = o.at("ms").get<double>();
          span.ops.push_back(std::move(op));
        }
        stage.spans.push_back(std::move(span));
      }
      timeline.stages.push_back(std::move(stage));
    }
    return timeline;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("timeline: ") + e.what());
  }
}

}  // namespace autograph
