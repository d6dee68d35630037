#include "executor/packed_weights.h"

#include <algorithm>
#include <string>

#include "autograph/error.h"
#include "core/op_graph.h"

namespace autograph {

using nlohmann::json;

std::shared_ptr<const PackedWeights> PackedWeights::FromJson(const json& entry, const std::vector<bool>& is_weight) {
  const size_t num_inputs = is_weight.size();
  auto packed = std::make_shared<PackedWeights>();
  packed->num_inputs_ = num_inputs;
  std::vector<bool> taken(num_inputs, false);
  for (const json& g : entry.at("groups")) {
    const std::string name = g.at("dtype").get<std::string>();
    const std::optional<c10::ScalarType> dtype = ScalarTypeFromString(name);
    if (!dtype) throw Error("corrupted program: packed weights of unknown dtype '" + name + "'");
    Group group{*dtype, {}};
    for (const json& m : g.at("members")) {
      Member member{m.at(0).get<int>(), m.at(1).get<int64_t>(), m.at(2).get<std::vector<int64_t>>(),
                    m.at(3).get<std::vector<int64_t>>()};
      if (member.position < 0 || static_cast<size_t>(member.position) >= num_inputs || !is_weight[member.position] ||
          taken[member.position] ||
          member.offset < 0 || member.shape.size() != member.stride.size())
        throw Error("corrupted program: packed weight " + m.dump());
      taken[member.position] = true;
      // A view reaches 1 + sum((size - 1) * stride) elements past its offset; an empty one none.
      int64_t span = 1;
      for (size_t d = 0; d < member.shape.size(); ++d) span += (member.shape[d] - 1) * member.stride[d];
      if (std::find(member.shape.begin(), member.shape.end(), 0) != member.shape.end()) span = 0;
      group.needed = std::max(group.needed, member.offset + span);
      group.members.push_back(std::move(member));
    }
    if (group.members.size() < 2) throw Error("corrupted program: a group of packed weights holds fewer than two");
    packed->groups_.push_back(std::move(group));
  }
  for (size_t i = 0; i < num_inputs; ++i)
    if (!taken[i]) packed->loose_.push_back(static_cast<int>(i));
  return packed;
}

json PackedWeights::ToJson() const {
  json groups = json::array();
  for (const Group& g : groups_) {
    json members = json::array();
    for (const Member& m : g.members) members.push_back({m.position, m.offset, m.shape, m.stride});
    groups.push_back({{"dtype", c10::toString(g.dtype)}, {"members", std::move(members)}});
  }
  return {{"groups", std::move(groups)}};
}

std::shared_ptr<const PackedWeights::Views> PackedWeights::ViewsOf(const std::vector<at::Tensor>& passed) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (latest_) {
      bool same = true;
      for (size_t g = 0; g < groups_.size() && same; ++g) {
        const at::Tensor &held = latest_->packed[g], &now = passed[g];
        same = now.defined() && held.data_ptr() == now.data_ptr() && held.device() == now.device() &&
               held.scalar_type() == now.scalar_type() && held.numel() == now.numel();
      }
      if (same) return latest_;
    }
  }
  auto views = std::make_shared<Views>();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const at::Tensor& t = passed[g];
    const Group& group = groups_[g];
    const std::string where = "tensor " + std::to_string(g) + " (packed weights)";
    if (!t.defined() || t.dim() != 1 || !t.is_contiguous() || t.scalar_type() != group.dtype)
      throw InputError(where + " must be a contiguous 1-d " + std::string(c10::toString(group.dtype)) +
                       " tensor; pass the optimized program's own buffers");
    if (group.needed > t.numel())
      throw InputError(where + " holds " + std::to_string(t.numel()) + " elements, too few for the weights it packs; "
                       "pass the optimized program's own buffers");
    for (const Member& m : group.members) views->views.push_back(t.as_strided(m.shape, m.stride, m.offset));
    views->packed.push_back(t);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = views;
  return views;
}

std::vector<at::Tensor> PackedWeights::Unpacked(const std::vector<at::Tensor>& passed) const {
  const std::shared_ptr<const Views> views = ViewsOf(passed);
  std::vector<at::Tensor> inputs(num_inputs_);
  size_t k = 0;
  for (const Group& g : groups_)
    for (const Member& m : g.members) inputs[m.position] = views->views[k++];
  for (size_t i = 0; i < loose_.size(); ++i) inputs[loose_[i]] = passed[groups_.size() + i];
  return inputs;
}

}  // namespace autograph
