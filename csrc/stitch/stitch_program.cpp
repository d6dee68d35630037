#include "stitch/stitch_program.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograph/error.h"

namespace autograph {

namespace {

struct OpInfo {
  StitchOp op;
  const char* name;
  int arity;
};

constexpr OpInfo kOps[] = {
    {StitchOp::Input, "in", 0},          {StitchOp::Constant, "const", 0},
    {StitchOp::Neg, "neg", 1},           {StitchOp::Exp, "exp", 1},
    {StitchOp::Log, "log", 1},           {StitchOp::Sqrt, "sqrt", 1},
    {StitchOp::Rsqrt, "rsqrt", 1},       {StitchOp::Tanh, "tanh", 1},
    {StitchOp::Sigmoid, "sigmoid", 1},   {StitchOp::Relu, "relu", 1},
    {StitchOp::Gelu, "gelu", 1},         {StitchOp::GeluTanh, "gelu_tanh", 1},
    {StitchOp::Abs, "abs", 1},           {StitchOp::Reciprocal, "reciprocal", 1},
    {StitchOp::Erf, "erf", 1},           {StitchOp::Add, "add", 2},
    {StitchOp::Sub, "sub", 2},           {StitchOp::Mul, "mul", 2},
    {StitchOp::Div, "div", 2},           {StitchOp::Max, "max", 2},
    {StitchOp::Min, "min", 2},           {StitchOp::Pow, "pow", 2},
    {StitchOp::RowSum, "rowsum", 1},     {StitchOp::RowMean, "rowmean", 1},
    {StitchOp::RowMax, "rowmax", 1},     {StitchOp::RowMin, "rowmin", 1},
};

const OpInfo& Info(StitchOp op) {
  for (const OpInfo& i : kOps)
    if (i.op == op) return i;
  throw Error("stitch program: unknown op code " + std::to_string(static_cast<int>(op)));
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

int ParseInt(const std::string& word, const std::string& where) {
  size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != word.size()) throw InputError("stitch program: " + where + ": '" + word + "' is not an integer");
  return v;
}

// Shortest text that reads back as the same double.
std::string FormatDouble(double v) {
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

const char* NameOf(StitchOp op) { return Info(op).name; }
int ArityOf(StitchOp op) { return Info(op).arity; }
bool IsReduction(StitchOp op) {
  return op == StitchOp::RowSum || op == StitchOp::RowMean || op == StitchOp::RowMax || op == StitchOp::RowMin;
}

int StitchProgram::num_inputs() const {
  int n = 0;
  for (const auto& s : statements)
    if (s.op == StitchOp::Input) n = std::max(n, s.input + 1);
  return n;
}

bool StitchProgram::is_row(int value) const {
  const StitchStatement& s = statements.at(value);
  if (s.op == StitchOp::Input) return false;
  if (s.op == StitchOp::Constant || IsReduction(s.op)) return true;
  for (int a : s.args)
    if (!is_row(a)) return false;
  return true;
}

bool StitchProgram::has_reductions() const {
  for (const auto& s : statements)
    if (IsReduction(s.op)) return true;
  return false;
}

std::string StitchProgram::ToString() const {
  std::ostringstream out;
  out << "reduce " << reduce_dims;
  for (const auto& s : statements) {
    out << "; " << NameOf(s.op);
    if (s.op == StitchOp::Input) out << " " << s.input;
    if (s.op == StitchOp::Constant) out << " " << FormatDouble(s.constant);
    for (int a : s.args) out << " " << a;
  }
  for (const auto& o : outputs) {
    if (is_row(o.value)) {
      out << "; outrow " << o.value << (o.keepdim ? " keepdim" : "");
    } else {
      out << "; out " << o.value;
    }
  }
  return out.str();
}

void ValidateStitchProgram(const StitchProgram& p) {
  auto fail = [](const std::string& where, const std::string& what) {
    throw InputError("stitch program: " + where + ": " + what);
  };
  if (p.reduce_dims < 0 || p.reduce_dims > 8) fail("header", "reduce must be 0..8, got " + std::to_string(p.reduce_dims));
  std::vector<bool> input_seen;
  for (size_t i = 0; i < p.statements.size(); ++i) {
    const StitchStatement& s = p.statements[i];
    const std::string where = "value " + std::to_string(i) + " (" + NameOf(s.op) + ")";
    if (static_cast<int>(s.args.size()) != ArityOf(s.op)) {
      fail(where, "takes " + std::to_string(ArityOf(s.op)) + " value(s), got " + std::to_string(s.args.size()));
    }
    for (int a : s.args) {
      if (a < 0 || a >= static_cast<int>(i)) fail(where, "argument " + std::to_string(a) + " is not an earlier value");
    }
    if (s.op == StitchOp::Input) {
      if (s.input < 0 || s.input > 4096) fail(where, "input index " + std::to_string(s.input) + " out of range");
      if (static_cast<int>(input_seen.size()) <= s.input) input_seen.resize(s.input + 1, false);
      input_seen[s.input] = true;
    }
    if (s.op == StitchOp::Constant && !std::isfinite(s.constant) && !std::isinf(s.constant)) {
      fail(where, "constant is NaN");
    }
    if (IsReduction(s.op)) {
      if (p.reduce_dims == 0) fail(where, "reductions need a header 'reduce k' with k >= 1");
      if (p.is_row(s.args[0])) fail(where, "reduces value " + std::to_string(s.args[0]) + ", which is already a row value");
    }
  }
  for (size_t k = 0; k < input_seen.size(); ++k) {
    if (!input_seen[k]) fail("inputs", "input " + std::to_string(k) + " is never read (inputs must be numbered 0..n-1)");
  }
  if (input_seen.empty()) fail("inputs", "a program reads at least one tensor input (it defines the domain)");
  if (p.outputs.empty()) fail("outputs", "no 'out' or 'outrow' statement");
  for (const auto& o : p.outputs) {
    if (o.value < 0 || o.value >= static_cast<int>(p.statements.size())) {
      fail("outputs", "output value " + std::to_string(o.value) + " is not defined");
    }
    if (o.keepdim && !p.is_row(o.value)) fail("outputs", "keepdim on full value " + std::to_string(o.value));
  }
}

StitchProgram ParseStitchProgram(const std::string& text) {
  StitchProgram p;
  std::vector<std::string> parts;
  {
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, ';')) parts.push_back(Trim(part));
  }
  if (parts.empty() || Words(parts[0]).size() != 2 || Words(parts[0])[0] != "reduce") {
    throw InputError("stitch program: must start with 'reduce k;' (got '" + text.substr(0, 40) + "')");
  }
  p.reduce_dims = ParseInt(Words(parts[0])[1], "header");
  for (size_t i = 1; i < parts.size(); ++i) {
    std::vector<std::string> w = Words(parts[i]);
    const std::string where = "statement " + std::to_string(i) + " '" + parts[i] + "'";
    if (w.empty()) throw InputError("stitch program: " + where + ": empty statement");
    if (w[0] == "out" || w[0] == "outrow") {
      StitchOutput o;
      if (w.size() < 2 || w.size() > 3) throw InputError("stitch program: " + where + ": expected '" + w[0] + " V'");
      o.value = ParseInt(w[1], where);
      if (w.size() == 3) {
        if (w[0] != "outrow" || w[2] != "keepdim") throw InputError("stitch program: " + where + ": unexpected '" + w[2] + "'");
        o.keepdim = true;
      }
      if (o.value >= 0 && o.value < static_cast<int>(p.statements.size()) && (w[0] == "outrow") != p.is_row(o.value)) {
        throw InputError("stitch program: " + where + ": value " + w[1] + " is a " +
                         (p.is_row(o.value) ? "row value (use outrow)" : "full value (use out)"));
      }
      p.outputs.push_back(o);
      continue;
    }
    if (!p.outputs.empty()) throw InputError("stitch program: " + where + ": statements after the outputs");
    const OpInfo* info = nullptr;
    for (const OpInfo& k : kOps)
      if (w[0] == k.name) info = &k;
    if (!info) throw InputError("stitch program: " + where + ": unknown op '" + w[0] + "'");
    StitchStatement s;
    s.op = info->op;
    size_t expected = 1 + (info->arity == 0 ? 1 : info->arity);
    if (w.size() != expected) {
      throw InputError("stitch program: " + where + ": '" + w[0] + "' takes " + std::to_string(expected - 1) + " operand(s)");
    }
    if (s.op == StitchOp::Input) {
      s.input = ParseInt(w[1], where);
    } else if (s.op == StitchOp::Constant) {
      char* end = nullptr;
      s.constant = std::strtod(w[1].c_str(), &end);
      if (end != w[1].c_str() + w[1].size()) throw InputError("stitch program: " + where + ": '" + w[1] + "' is not a number");
    } else {
      for (size_t a = 1; a < w.size(); ++a) s.args.push_back(ParseInt(w[a], where));
      for (int a : s.args) {
        if (a < 0 || a >= static_cast<int>(p.statements.size())) {
          throw InputError("stitch program: " + where + ": argument " + std::to_string(a) + " is not an earlier value");
        }
      }
    }
    p.statements.push_back(std::move(s));
  }
  ValidateStitchProgram(p);
  return p;
}

}  // namespace autograph
