// The optimize options as CLI flags, made from the option table (csrc/api/option_table.cpp): one
// --name-with-dashes per option (a bool as --name / --no-name), its help and default from the table.
// Values are collected as JSON and read by OptimizeOptionsFromJson, so the CLI validates them as
// Python does.
#include <string>

#include "api/option_table.h"
#include "autograph/error.h"
#include "commands.h"

namespace autograph::cli {

namespace {

std::string Dashed(std::string name) {
  for (char& c : name)
    if (c == '_') c = '-';
  return "--" + name;
}

std::string HelpOf(const OptionSpec& spec) {
  std::string help = spec.help + " [" + spec.applies + "; default ";
  if (!spec.default_note.empty()) return help + spec.default_note + "]";
  return help + spec.get(OptimizeOptions{}).dump() + "]";
}

}  // namespace

void AddOptimizeOptionFlags(CLI::App* cmd, nlohmann::json* given) {
  *given = nlohmann::json::object();
  for (const OptionSpec& spec : OptimizeOptionTable()) {
    const std::string name = spec.name, flag = Dashed(spec.name);
    if (spec.type == "bool") {
      cmd->add_flag_function(flag + ",!--no-" + flag.substr(2),
                             [given, name](int64_t count) { (*given)[name] = count > 0; }, HelpOf(spec));
      continue;
    }
    const std::string type = spec.type;
    cmd->add_option_function<std::string>(
        flag,
        [given, name, type, flag](const std::string& text) {
          try {
            size_t used = 0;
            if (type == "int") {
              (*given)[name] = std::stoll(text, &used);
            } else if (type == "float") {
              (*given)[name] = std::stod(text, &used);
            } else {
              (*given)[name] = text;
              used = text.size();
            }
            if (used != text.size()) throw std::invalid_argument(text);
          } catch (const std::logic_error&) {
            throw CLI::ValidationError(flag, "'" + text + "' is not " + (type == "int" ? "an integer" : "a number"));
          }
        },
        HelpOf(spec))
        ->type_name(type == "int" ? "INT" : type == "float" ? "FLOAT" : "TEXT");
  }
}

}  // namespace autograph::cli
