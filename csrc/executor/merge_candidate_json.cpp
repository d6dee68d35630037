#include "executor/merge_candidate_json.h"

#include "autograph/error.h"
#include "executor/plan_integers.h"

namespace autograph {

nlohmann::json MergeCandidateToJson(const MergeCandidate& c) {
  nlohmann::json json = {{"kind", c.kind == MergeCandidate::Kind::Convolution ? "convolution" : "linear"},
                         {"input", c.input},
                         {"input_name", c.input_name},
                         {"bias", c.bias.has_value() || c.bias_input >= 0},
                         {"stride", c.stride},
                         {"padding", c.padding},
                         {"dilation", c.dilation}};
  if (c.weight_input >= 0) json["weight_input"] = c.weight_input;
  if (c.bias_input >= 0) json["bias_input"] = c.bias_input;
  return json;
}

MergeCandidate MergeCandidateFromJson(const nlohmann::json& json) {
  MergeCandidate c;
  const std::string kind = json.at("kind").get<std::string>();
  if (kind != "convolution" && kind != "linear") throw Error("corrupted program: unknown merge kind '" + kind + "'");
  c.kind = kind == "convolution" ? MergeCandidate::Kind::Convolution : MergeCandidate::Kind::Linear;
  c.input = PlanInt(json.at("input"));
  c.input_name = json.at("input_name").get<std::string>();
  c.stride = PlanInts(json.at("stride"));
  c.padding = PlanInts(json.at("padding"));
  c.dilation = PlanInts(json.at("dilation"));
  if (json.contains("weight_input")) c.weight_input = PlanIndex(json.at("weight_input"));
  if (json.contains("bias_input")) c.bias_input = PlanIndex(json.at("bias_input"));
  return c;
}

}  // namespace autograph
