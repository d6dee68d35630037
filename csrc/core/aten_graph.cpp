#include "core/aten_graph.h"

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autograph/error.h"

namespace autograph {

namespace {

using nlohmann::json;

[[noreturn]] void Malformed(const std::string& what) { throw Error("malformed exported graph: " + what); }

int64_t IntOf(const json& v, const std::string& where) {
  if (!v.is_number_integer()) Malformed(where + ": " + v.dump() + " is not an integer");
  return v.get<int64_t>();
}

// Floats travel as their repr ("1e-05", "inf", "nan"): JSON has no infinities.
double FloatOf(const json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) Malformed(where + ": " + v.dump() + " is not a float");
  const std::string text = v.get<std::string>();
  try {
    size_t used = 0;
    const double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (const std::exception&) {
  }
  Malformed(where + ": '" + text + "' is not a float");
}

std::string FloatText(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", d);
  return buffer;
}

c10::ScalarType DtypeOf(const std::string& name) {
  if (std::optional<c10::ScalarType> type = ScalarTypeFromString(name)) return *type;
  throw UnsupportedModelError("the exported graph uses dtype '" + name + "', which autograph does not know");
}

const std::vector<std::pair<std::string, c10::Layout>>& Layouts() {
  static const std::vector<std::pair<std::string, c10::Layout>> layouts = {
      {"Strided", c10::kStrided}, {"Sparse", c10::kSparse}, {"Mkldnn", c10::kMkldnn}, {"Jagged", c10::kJagged}};
  return layouts;
}

const std::vector<std::pair<std::string, c10::MemoryFormat>>& MemoryFormats() {
  static const std::vector<std::pair<std::string, c10::MemoryFormat>> formats = {
      {"Contiguous", c10::MemoryFormat::Contiguous},
      {"Preserve", c10::MemoryFormat::Preserve},
      {"ChannelsLast", c10::MemoryFormat::ChannelsLast},
      {"ChannelsLast3d", c10::MemoryFormat::ChannelsLast3d}};
  return formats;
}

template <typename T>
T Named(const std::vector<std::pair<std::string, T>>& table, const std::string& name, const std::string& what) {
  for (const auto& [n, v] : table)
    if (n == name) return v;
  throw UnsupportedModelError("the exported graph uses " + what + " '" + name + "', which autograph does not know");
}

template <typename T>
std::string NameOf(const std::vector<std::pair<std::string, T>>& table, T value) {
  for (const auto& [n, v] : table)
    if (v == value) return n;
  throw Error("no name for this layout or memory format");
}

c10::IValue ConstantFromJson(const json& v, const std::string& where) {
  if (v.is_null()) return c10::IValue();
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return v.get<double>();
  if (!v.is_object() || v.size() != 1) Malformed(where + ": unknown constant " + v.dump());
  // Through v's own iterator: items() yields a proxy object, and a reference into it would dangle.
  const std::string& tag = v.begin().key();
  const json& x = v.begin().value();
  if (tag == "float") return FloatOf(x, where);
  if (tag == "str") {
    if (!x.is_string()) Malformed(where + ": a str constant that is not a string");
    return x.get<std::string>();
  }
  if (tag == "ints" || tag == "floats" || tag == "bools") {
    if (!x.is_array()) Malformed(where + ": " + tag + " is not a list");
    if (tag == "ints") {
      c10::List<int64_t> list;
      for (const json& e : x) list.push_back(IntOf(e, where));
      return list;
    }
    if (tag == "floats") {
      c10::List<double> list;
      for (const json& e : x) list.push_back(FloatOf(e, where));
      return list;
    }
    c10::List<bool> list;
    for (const json& e : x) {
      if (!e.is_boolean()) Malformed(where + ": a bools list holds " + e.dump());
      list.push_back(e.get<bool>());
    }
    return list;
  }
  if (!x.is_string()) Malformed(where + ": " + tag + " is not a string");
  const std::string name = x.get<std::string>();
  if (tag == "dtype") return DtypeOf(name);
  if (tag == "layout") return Named(Layouts(), name, "layout");
  if (tag == "memory_format") return Named(MemoryFormats(), name, "memory format");
  if (tag == "device") {
    try {
      return c10::Device(name);
    } catch (const std::exception&) {
      Malformed(where + ": '" + name + "' is not a device");
    }
  }
  throw UnsupportedModelError(where + ": autograph cannot carry a constant of kind '" + tag + "'");
}

// The inverse; the argument's schema type tells a dtype from an int, so those are written by the
// importer and kept here as the IValue holds them (ints).
json ConstantToJson(const c10::IValue& c) {
  if (c.isNone()) return nullptr;
  if (c.isBool()) return c.toBool();
  if (c.isInt()) return c.toInt();
  if (c.isDouble()) return {{"float", FloatText(c.toDouble())}};
  if (c.isString()) return {{"str", c.toStringRef()}};
  if (c.isIntList()) return {{"ints", c.toIntVector()}};
  if (c.isDoubleList()) {
    json list = json::array();
    for (double d : c.toDoubleVector()) list.push_back(FloatText(d));
    return {{"floats", list}};
  }
  if (c.isBoolList()) {
    json list = json::array();
    for (bool b : c.toBoolList()) list.push_back(b);
    return {{"bools", list}};
  }
  if (c.isDevice()) return {{"device", c.toDevice().str()}};
  throw Error("AtenGraph::ToJson: a constant of kind " + std::string(c.tagKind()) + " (internal error)");
}

AtenArgument ArgumentFromJson(const json& v, const std::string& where) {
  AtenArgument a;
  if (v.is_object() && v.size() == 1 && v.contains("value")) {
    a.kind = AtenArgument::Kind::Value;
    a.value = static_cast<int>(IntOf(v.at("value"), where));
  } else if (v.is_object() && v.size() == 1 && v.contains("values")) {
    a.kind = AtenArgument::Kind::ValueList;
    if (!v.at("values").is_array()) Malformed(where + ": values is not a list");
    bool has_constants = false;
    for (const json& e : v.at("values")) {
      if (e.is_object()) {  // {"int": n}: a constant element of an int list
        if (e.size() != 1 || !e.contains("int")) Malformed(where + ": a list element " + e.dump());
        a.values.emplace_back(std::nullopt);
        a.element_constants.emplace_back(IntOf(e.at("int"), where));
        has_constants = true;
        continue;
      }
      if (e.is_null()) a.values.emplace_back(std::nullopt);
      else a.values.emplace_back(static_cast<int>(IntOf(e, where)));
      a.element_constants.emplace_back();
    }
    if (!has_constants) a.element_constants.clear();
  } else {
    a.constant = ConstantFromJson(v, where);
  }
  return a;
}

json ArgumentToJson(const AtenArgument& a) {
  switch (a.kind) {
    case AtenArgument::Kind::Value:
      return {{"value", a.value}};
    case AtenArgument::Kind::ValueList: {
      json list = json::array();
      for (size_t i = 0; i < a.values.size(); ++i) {
        if (a.values[i]) list.push_back(*a.values[i]);
        else if (i < a.element_constants.size() && a.element_constants[i].isInt())
          list.push_back({{"int", a.element_constants[i].toInt()}});
        else list.push_back(nullptr);
      }
      return {{"values", list}};
    }
    case AtenArgument::Kind::Constant:
      return ConstantToJson(a.constant);
  }
  return nullptr;
}

std::vector<int64_t> IntsOf(const json& v, const std::string& where) {
  if (!v.is_array()) Malformed(where + ": not a list of integers");
  std::vector<int64_t> out;
  for (const json& e : v) out.push_back(IntOf(e, where));
  return out;
}

}  // namespace

std::string AtenGraph::Describe(int node) const {
  const AtenNode& n = nodes.at(node);
  std::string text = n.op + (n.overload.empty() ? "" : "." + n.overload);
  if (!n.name.empty()) text += " (%" + n.name + ")";
  return text;
}

AtenGraph AtenGraph::FromJson(const json& j) {
  AtenGraph g;
  try {
    if (!j.is_object()) Malformed("not a JSON object");
    if (IntOf(j.at("version"), "version") != 1)
      Malformed("version " + j.at("version").dump() + "; this build reads version 1");
    for (const json& v : j.at("values")) {
      AtenValueInfo info;
      info.tensor = v.at("tensor").get<bool>();
      if (info.tensor) {
        info.meta.shape = IntsOf(v.at("shape"), "a value's shape");
        info.stride = IntsOf(v.at("stride"), "a value's stride");
        info.meta.dtype = DtypeOf(v.at("dtype").get<std::string>());
        if (info.stride.size() != info.meta.shape.size()) Malformed("a value's stride and shape differ in rank");
      }
      g.values.push_back(std::move(info));
    }
    const int num_values = static_cast<int>(g.values.size());
    std::vector<bool> defined(num_values, false);
    auto check_id = [&](int64_t id, const std::string& where) {
      if (id < 0 || id >= num_values) Malformed(where + " names value " + std::to_string(id) + ", which does not exist");
      return static_cast<int>(id);
    };
    auto define = [&](int id, const std::string& where) {
      if (defined[id]) Malformed(where + " defines value " + std::to_string(id) + " a second time");
      defined[id] = true;
    };
    auto read = [&](int id, const std::string& where) {
      if (!defined[id]) Malformed(where + " reads value " + std::to_string(id) + " before it is defined");
    };
    for (const json& i : j.at("inputs")) {
      const int id = check_id(IntOf(i, "an input"), "an input");
      define(id, "an input");
      g.inputs.push_back(id);
    }
    for (const json& w : j.at("weights")) g.input_is_weight.push_back(w.get<bool>());
    if (g.input_is_weight.size() != g.inputs.size()) Malformed("one weight flag per input expected");
    for (const json& n : j.at("nodes")) {
      AtenNode node;
      node.op = n.at("op").get<std::string>();
      node.overload = n.at("overload").get<std::string>();
      if (node.overload == "default") node.overload.clear();
      node.name = n.value("name", std::string());
      const std::string where = "node %" + node.name + " (" + node.op + ")";
      for (const json& a : n.at("args")) node.args.push_back(ArgumentFromJson(a, where));
      for (const auto& [name, a] : n.at("kwargs").items()) node.kwargs.emplace_back(name, ArgumentFromJson(a, where));
      auto check_reads = [&](AtenArgument& a) {
        if (a.kind == AtenArgument::Kind::Value) read(a.value = check_id(a.value, where), where);
        for (auto& v : a.values)
          if (v) read(*v = check_id(*v, where), where);
      };
      for (AtenArgument& a : node.args) check_reads(a);
      for (auto& [name, a] : node.kwargs) check_reads(a);
      for (const json& o : n.at("outputs")) {
        const int id = check_id(IntOf(o, where), where);
        define(id, where);
        node.outputs.push_back(id);
      }
      if (node.op == "getitem" &&
          (node.args.size() != 2 || node.args[0].kind != AtenArgument::Kind::Value || !node.args[1].constant.isInt() ||
           node.outputs.size() != 1))
        Malformed(where + ": getitem takes a value and an integer index and defines one value");
      g.nodes.push_back(std::move(node));
    }
    for (const json& o : j.at("outputs")) {
      const int id = check_id(IntOf(o, "an output"), "an output");
      read(id, "the output");
      g.outputs.push_back(id);
    }
  } catch (const json::exception& e) {
    Malformed(e.what());
  }
  return g;
}

json AtenGraph::ToJson() const {
  json values_json = json::array();
  for (const AtenValueInfo& v : values) {
    json entry = {{"tensor", v.tensor}};
    if (v.tensor) {
      entry["shape"] = v.meta.shape;
      entry["stride"] = v.stride;
      entry["dtype"] = c10::toString(v.meta.dtype);
    }
    values_json.push_back(std::move(entry));
  }
  json nodes_json = json::array();
  for (const AtenNode& n : nodes) {
    json args = json::array(), kwargs = json::object();
    for (const AtenArgument& a : n.args) args.push_back(ArgumentToJson(a));
    for (const auto& [name, a] : n.kwargs) kwargs[name] = ArgumentToJson(a);
    nodes_json.push_back({{"op", n.op},
                          {"overload", n.overload.empty() ? "default" : n.overload},
                          {"name", n.name},
                          {"args", args},
                          {"kwargs", kwargs},
                          {"outputs", n.outputs}});
  }
  return {{"version", 1},    {"values", values_json}, {"inputs", inputs}, {"weights", input_is_weight},
          {"nodes", nodes_json}, {"outputs", outputs}};
}

}  // namespace autograph
