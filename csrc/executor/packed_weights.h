#pragma once
// PackedWeights: how an optimized exported program takes many small weights as a few tensors. Each
// call of a program hands its weights over one by one (the exported graph reads each as an attribute,
// the operator call boxes each), a host cost per weight per call that a model of hundreds of small
// weights (a NASNet's ~800) pays on every run. A packed program takes, in place of its small weights,
// one 1-D tensor per dtype that holds them all ("packed"), then the weights it did not pack, the
// user's tensors and any extra weights in their order; it makes the views of each packed tensor once
// and keeps them while the same tensors come (same memory: the views hold it, so it cannot be another
// tensor's). A packed weight written in place is seen through its view (and its version counter,
// shared with the packed tensor, tells merged kernels to rebuild).
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

namespace autograph {

class PackedWeights {
 public:
  struct Member {
    int position;  // among the program's inputs, unpacked
    int64_t offset;  // in elements of the packed tensor
    std::vector<int64_t> shape, stride;
  };
  struct Group {
    c10::ScalarType dtype;
    std::vector<Member> members;
    int64_t needed = 0;  // the elements its packed tensor must hold: where its last member's view ends
  };

  // From the body's "packed_weights" entry ({"groups": [{"dtype": "Float", "members": [[position,
  // offset, shape, stride], ...]}, ...]}), for a program whose inputs, unpacked, are weights that may be
  // packed where `is_weight` says (not the user's tensors, not compiled parts' packages). Throws Error on a member that is not a weight's, a position packed twice, a group
  // of fewer than two.
  static std::shared_ptr<const PackedWeights> FromJson(const nlohmann::json& entry, const std::vector<bool>& is_weight);
  nlohmann::json ToJson() const;

  // How many tensors a packed call passes: one per group, then the inputs no group holds.
  size_t num_passed() const { return groups_.size() + loose_.size(); }
  // The program's inputs, unpacked, from a packed call's `passed` (num_passed of them). Checks each
  // packed tensor (1-D, contiguous, its group's dtype, long enough: InputError). Thread-safe.
  std::vector<at::Tensor> Unpacked(const std::vector<at::Tensor>& passed) const;

 private:
  std::vector<Group> groups_;
  std::vector<int> loose_;  // the positions no group holds, ascending: passed after the packed tensors
  size_t num_inputs_ = 0;
  struct Views {
    std::vector<at::Tensor> packed;  // the tensors they view (held: their memory stays theirs)
    std::vector<at::Tensor> views;   // by member, groups in order
  };
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Views> latest_;
  std::shared_ptr<const Views> ViewsOf(const std::vector<at::Tensor>& passed) const;
};

}  // namespace autograph
