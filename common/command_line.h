// A small command-line flag parser for the serenity binaries: long flags
// (--name value or --name=value), positional arguments, and generated --help
// text that lists every flag with its default.
//
// Defaults in --help: each flag's entry ends with "(default: X)", X the
// target's value at registration (none for an empty string or a repeated
// flag), unless its help text already contains "(default": a help text can
// so state a default in words ("(default: the core count)", "(default: 0,
// none)") without it being printed twice.
#ifndef SERENITY_COMMON_COMMAND_LINE_H_
#define SERENITY_COMMON_COMMAND_LINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace serenity {

class FlagSet {
 public:
  // `usage` is the synopsis line ("serenity-client plan MODEL... [flags]");
  // `description` a paragraph printed under it.
  FlagSet(std::string usage, std::string description);

  // Registers a flag writing into `*target`; the target's current value is
  // the default shown in --help. Bool flags take no value (--x sets true;
  // --x=false clears). Repeated flags append each occurrence.
  void AddBool(const std::string& name, bool* target, const std::string& help);
  void AddString(const std::string& name, std::string* target, const std::string& value_name, const std::string& help);
  void AddInt(const std::string& name, int64_t* target, const std::string& value_name, const std::string& help);
  // A byte count: a plain integer or one with a unit suffix, as
  // ParseByteSize (common/byte_size.h) reads it ("2MiB", "64KB"); the
  // default in --help is in bytes.
  void AddBytes(const std::string& name, int64_t* target, const std::string& value_name, const std::string& help);
  void AddDouble(const std::string& name, double* target, const std::string& value_name, const std::string& help);
  void AddRepeated(const std::string& name, std::vector<std::string>* target, const std::string& value_name,
                   const std::string& help);

  // Parses `args` (without the program or subcommand name). Arguments not
  // starting with "--" (and all after a bare "--") are positional.
  // InvalidArgument for an unknown flag, a missing or malformed value.
  absl::Status Parse(const std::vector<std::string>& args);

  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The usage, description and one entry per flag.
  std::string Help() const;

 private:
  enum class Kind { kBool, kString, kInt, kBytes, kDouble, kRepeated };
  struct Flag {
    std::string name;
    Kind kind;
    void* target;
    std::string value_name;
    std::string help;
    std::string default_text;
  };
  void Add(Flag flag);
  absl::Status Assign(const Flag& flag, const std::string& value);

  std::string usage_;
  std::string description_;
  std::vector<Flag> flags_;
  std::vector<std::string> positionals_;
  bool help_requested_ = false;
};

}  // namespace serenity

#endif  // SERENITY_COMMON_COMMAND_LINE_H_
