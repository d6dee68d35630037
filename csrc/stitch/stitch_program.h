#pragma once
// A stitch program: a group of memory-intensive operators that runs as one kernel
// (autograph::stitched). It is plain text so that it travels as an ordinary op argument and the
// module stays serializable, e.g. softmax(x / 8) over the last dimension:
//
//   reduce 1; in 0; const 8; div 0 1; rowmax 2; sub 2 3; exp 4; rowsum 5; div 5 6; out 7
//
// Iteration domain: the broadcast shape D of the program's tensor inputs. `reduce k` splits it into
// rows (the leading dims of D) and columns (the last k dims); k = 0 means no reductions (the last
// dim is then the column dim). Statements are separated by ';' and, after the header, each defines
// one value numbered from 0 in order:
//   in I                 tensor input I, broadcast to D (a full value)
//   const C              a scalar (a row value)
//   <unary> A            neg exp log sqrt rsqrt tanh sigmoid relu gelu gelu_tanh abs reciprocal erf
//   <binary> A B         add sub mul div max min pow
//   <reduction> A        rowsum rowmean rowmax rowmin: over the columns of a full value -> a row value
// A value is full (one per element of D) or row (one per row, constant along the columns); an
// elementwise op is full when any argument is. `out V` and `outrow V [keepdim]` end the program
// (at least one): a full output has shape D; a row output has D's row dims (+ k ones if keepdim).
// Arithmetic is in float (double for double tensors); outputs have the inputs' dtype, which must
// be one floating dtype for all inputs.
#include <cstdint>
#include <string>
#include <vector>

namespace autograph {

enum class StitchOp {
  Input, Constant,
  // unary
  Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, GeluTanh, Abs, Reciprocal, Erf,
  // binary
  Add, Sub, Mul, Div, Max, Min, Pow,
  // reductions over the columns
  RowSum, RowMean, RowMax, RowMin,
};

const char* NameOf(StitchOp op);
int ArityOf(StitchOp op);  // value arguments: 0 for Input/Constant, 1 unary/reduction, 2 binary
bool IsReduction(StitchOp op);

struct StitchStatement {
  StitchOp op = StitchOp::Constant;
  std::vector<int> args;  // earlier value ids
  int input = -1;         // Input: which tensor input
  double constant = 0;    // Constant
};

struct StitchOutput {
  int value = -1;
  bool keepdim = false;  // row outputs only
};

struct StitchProgram {
  int reduce_dims = 0;                     // k: the trailing dims the reductions run over
  std::vector<StitchStatement> statements; // value i is statements[i]
  std::vector<StitchOutput> outputs;

  int num_inputs() const;  // 1 + the largest input index
  bool is_row(int value) const;  // row value (one per row) rather than full
  bool has_reductions() const;
  std::string ToString() const;  // the text form; ParseStitchProgram(ToString()) == *this
};

// Parses and validates; throws autograph::InputError naming the statement and what is wrong
// (unknown op, wrong arity, forward reference, reduction of a row value, reduction without
// `reduce k`, unused input index gap, no outputs, row output that is full, ...).
StitchProgram ParseStitchProgram(const std::string& text);

// Validates a program built in memory (same rules as the parser).
void ValidateStitchProgram(const StitchProgram& program);

}  // namespace autograph
