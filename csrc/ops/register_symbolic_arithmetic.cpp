// autograph::scalar_op: the arithmetic an exported program does on sizes when its shapes are dynamic
// (FX calls Python's operator.mul, operator.floordiv, torch.sym_max... on SymInts). The export path's
// importer writes each such call as this op, so the executor runs the graph for any input shape with
// Python's semantics (floor division and modulo round toward minus infinity; `/` gives a float).
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace autograph {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  TORCH_CHECK(b != 0, "autograph::scalar_op: integer division by zero");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t IntPow(int64_t base, int64_t exponent) {
  int64_t result = 1;
  for (; exponent > 0; --exponent) result *= base;
  return result;
}

c10::Scalar Unary(const std::string& op, const c10::Scalar& a) {
  if (op == "neg") return a.isFloatingPoint() ? c10::Scalar(-a.toDouble()) : c10::Scalar(-a.toLong());
  if (op == "not") return c10::Scalar(!a.toBool());
  if (op == "float") return c10::Scalar(a.toDouble());
  if (op == "int") return c10::Scalar(static_cast<int64_t>(a.toDouble()));
  if (op == "floor") return c10::Scalar(static_cast<int64_t>(std::floor(a.toDouble())));
  if (op == "ceil") return c10::Scalar(static_cast<int64_t>(std::ceil(a.toDouble())));
  if (op == "abs") return a.isFloatingPoint() ? c10::Scalar(std::abs(a.toDouble())) : c10::Scalar(std::abs(a.toLong()));
  TORCH_CHECK(false, "autograph::scalar_op: unknown unary operation '", op, "'");
}

// What ints and floats do alike.
template <typename T>
std::optional<c10::Scalar> Common(const std::string& op, T x, T y) {
  if (op == "add") return c10::Scalar(x + y);
  if (op == "sub") return c10::Scalar(x - y);
  if (op == "mul") return c10::Scalar(x * y);
  if (op == "max") return c10::Scalar(std::max(x, y));
  if (op == "min") return c10::Scalar(std::min(x, y));
  if (op == "eq") return c10::Scalar(x == y);
  if (op == "ne") return c10::Scalar(x != y);
  if (op == "lt") return c10::Scalar(x < y);
  if (op == "le") return c10::Scalar(x <= y);
  if (op == "gt") return c10::Scalar(x > y);
  if (op == "ge") return c10::Scalar(x >= y);
  return std::nullopt;
}

c10::Scalar Binary(const std::string& op, const c10::Scalar& a, const c10::Scalar& b) {
  if (op == "and") return c10::Scalar(a.toBool() && b.toBool());
  if (op == "or") return c10::Scalar(a.toBool() || b.toBool());
  if (a.isFloatingPoint() || b.isFloatingPoint() || op == "truediv") {
    const double x = a.toDouble(), y = b.toDouble();
    if (std::optional<c10::Scalar> r = Common(op, x, y)) return *r;
    if (op == "truediv") return x / y;
    if (op == "floordiv") return std::floor(x / y);
    if (op == "mod") return x - std::floor(x / y) * y;
    if (op == "pow") return std::pow(x, y);
  } else {
    const int64_t x = a.toLong(), y = b.toLong();
    if (std::optional<c10::Scalar> r = Common(op, x, y)) return *r;
    if (op == "floordiv") return FloorDiv(x, y);
    if (op == "mod") return x - FloorDiv(x, y) * y;
    if (op == "pow") return y >= 0 ? c10::Scalar(IntPow(x, y)) : c10::Scalar(std::pow(double(x), double(y)));
  }
  TORCH_CHECK(false, "autograph::scalar_op: unknown binary operation '", op, "'");
}

c10::Scalar ScalarOp(c10::string_view op, const c10::Scalar& a, const std::optional<c10::Scalar>& b) {
  const std::string name(op.data(), op.size());
  return b ? Binary(name, a, *b) : Unary(name, a);
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  // A catch-all kernel: the op reads no tensor, so there is no dispatch key to register it under.
  m.def("scalar_op(str op, Scalar a, Scalar? b=None) -> Scalar", TORCH_FN(autograph::ScalarOp));
}
