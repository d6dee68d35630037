#include "executor/float32_switches.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <optional>
#include <vector>

namespace autograph {

// The switches as the user left them: the new per-backend values as stored (NONE: inherit), and the
// legacy float32 matmul precision, which cuBLAS's check requires to agree with the new matmul switch.
struct Float32Switches {
  std::optional<at::Float32MatmulPrecision> matmul_legacy;  // none: the user's switches disagree already
  at::Float32Precision cuda_matmul, cuda_conv, cuda_rnn, mkldnn_matmul;
};

namespace {

using B = at::Float32Backend;
using O = at::Float32Op;
using Switches = Float32Switches;

Switches Saved() {
  at::Context& ctx = at::globalContext();
  Switches saved{std::nullopt, ctx.float32Precision(B::CUDA, O::MATMUL), ctx.float32Precision(B::CUDA, O::CONV),
                 ctx.float32Precision(B::CUDA, O::RNN), ctx.float32Precision(B::MKLDNN, O::MATMUL)};
  try {
    saved.matmul_legacy = ctx.float32MatmulPrecision();
  } catch (const c10::Error&) {  // legacy and new switches mixed by the user: restored as the new ones say
  }
  return saved;
}

const char* NameOf(at::Float32MatmulPrecision p) {
  switch (p) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "highest";
}

// CUDA's float32 matmuls, convolutions and RNNs in TF32 (tf32) or in full precision.
void SetCuda(bool tf32) {
  at::Context& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(tf32);  // the legacy switch and the new one together
  const at::Float32Precision p = tf32 ? at::Float32Precision::TF32 : at::Float32Precision::IEEE;
  ctx.setFloat32Precision(B::CUDA, O::CONV, p);
  ctx.setFloat32Precision(B::CUDA, O::RNN, p);
}

void Restore(const Switches& saved) noexcept {
  at::Context& ctx = at::globalContext();
  try {
    // The legacy setter moves the new matmul switches too; the stored values are put back after it.
    ctx.setFloat32MatmulPrecision(NameOf(saved.matmul_legacy.value_or(at::Float32MatmulPrecision::HIGHEST)));
    ctx.setFloat32Precision(B::CUDA, O::MATMUL, saved.cuda_matmul);
    ctx.setFloat32Precision(B::MKLDNN, O::MATMUL, saved.mkldnn_matmul);
    ctx.setFloat32Precision(B::CUDA, O::CONV, saved.cuda_conv);
    ctx.setFloat32Precision(B::CUDA, O::RNN, saved.cuda_rnn);
  } catch (const c10::Error&) {  // called from destructors; the values set above are valid ones
  }
}

std::mutex tf32_mutex;
int tf32_depth = 0;
Switches before_tf32;

}  // namespace

Tf32Scope::Tf32Scope(bool on) : on_(on) {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(tf32_mutex);
  if (tf32_depth++ > 0) return;
  before_tf32 = Saved();
  SetCuda(true);
}

Tf32Scope::~Tf32Scope() {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(tf32_mutex);
  if (--tf32_depth == 0) Restore(before_tf32);
}

std::vector<int64_t> Float32SwitchesKey() {
  at::Context& ctx = at::globalContext();
  std::vector<int64_t> key;
  key.reserve(10);
  for (O op : {O::ALL, O::MATMUL, O::CONV, O::RNN}) key.push_back(static_cast<int64_t>(ctx.float32Precision(B::CUDA, op)));
  // The effective answers too: the legacy switches (cuDNN's allow_tf32, the float32 matmul precision) are
  // read through them. Mixed legacy and new switches make a getter throw; that state is a value of its own.
  const auto read = [&key](auto getter) {
    try {
      key.push_back(static_cast<int64_t>(getter()));
    } catch (const c10::Error&) {
      key.push_back(-1);
    }
  };
  read([&] { return ctx.allowTF32CuBLAS(); });
  read([&] { return ctx.allowTF32CuDNN(O::CONV); });
  read([&] { return ctx.allowTF32CuDNN(O::RNN); });
  read([&] { return ctx.float32MatmulPrecision(); });
  read([&] { return ctx.allowFP16ReductionCuBLAS(); });
  read([&] { return ctx.allowBF16ReductionCuBLAS(); });
  return key;
}

FullPrecisionScope::FullPrecisionScope() : saved_(std::make_unique<Float32Switches>(Saved())) { SetCuda(false); }

FullPrecisionScope::~FullPrecisionScope() { Restore(*saved_); }

}  // namespace autograph
