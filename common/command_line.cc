#include "common/command_line.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/byte_size.h"

namespace serenity {

FlagSet::FlagSet(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {}

void FlagSet::Add(Flag flag) { flags_.push_back(std::move(flag)); }

void FlagSet::AddBool(const std::string& name, bool* target, const std::string& help) {
  Add({name, Kind::kBool, target, "", help, *target ? "true" : "false"});
}

void FlagSet::AddString(const std::string& name, std::string* target, const std::string& value_name,
                        const std::string& help) {
  Add({name, Kind::kString, target, value_name, help, target->empty() ? "" : *target});
}

void FlagSet::AddInt(const std::string& name, int64_t* target, const std::string& value_name, const std::string& help) {
  Add({name, Kind::kInt, target, value_name, help, absl::StrCat(*target)});
}

void FlagSet::AddBytes(const std::string& name, int64_t* target, const std::string& value_name,
                       const std::string& help) {
  Add({name, Kind::kBytes, target, value_name, help, absl::StrCat(*target)});
}

void FlagSet::AddDouble(const std::string& name, double* target, const std::string& value_name,
                        const std::string& help) {
  Add({name, Kind::kDouble, target, value_name, help, absl::StrCat(*target)});
}

void FlagSet::AddRepeated(const std::string& name, std::vector<std::string>* target, const std::string& value_name,
                          const std::string& help) {
  Add({name, Kind::kRepeated, target, value_name, help, ""});
}

absl::Status FlagSet::Assign(const Flag& flag, const std::string& value) {
  switch (flag.kind) {
    case Kind::kBool:
      if (value == "true" || value == "1") {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", flag.name, " takes true or false, not '", value, "'"));
      }
      return absl::OkStatus();
    case Kind::kString:
      *static_cast<std::string*>(flag.target) = value;
      return absl::OkStatus();
    case Kind::kInt:
      if (!absl::SimpleAtoi(value, static_cast<int64_t*>(flag.target))) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag.name, " takes an integer, not '", value, "'"));
      }
      return absl::OkStatus();
    case Kind::kBytes: {
      absl::StatusOr<int64_t> bytes = ParseByteSize(value);
      if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("--", flag.name, ": ", bytes.status().message()));
      *static_cast<int64_t*>(flag.target) = *bytes;
      return absl::OkStatus();
    }
    case Kind::kDouble:
      if (!absl::SimpleAtod(value, static_cast<double*>(flag.target))) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag.name, " takes a number, not '", value, "'"));
      }
      return absl::OkStatus();
    case Kind::kRepeated:
      static_cast<std::vector<std::string>*>(flag.target)->push_back(value);
      return absl::OkStatus();
  }
  return absl::InternalError("unknown flag kind");
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positionals_.insert(positionals_.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = std::find_if(flags_.begin(), flags_.end(), [&](const Flag& f) { return f.name == name; });
    if (it == flags_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!has_value) {
      if (it->kind == Kind::kBool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value ", it->value_name));
      }
    }
    absl::Status status = Assign(*it, value);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  std::string out = absl::StrCat("Usage: ", usage_, "\n\n", description_, "\n");
  if (!flags_.empty()) absl::StrAppend(&out, "\nFlags:\n");
  for (const Flag& f : flags_) {
    std::string head = absl::StrCat("  --", f.name);
    if (!f.value_name.empty()) absl::StrAppend(&head, " ", f.value_name);
    // Every line of the help under the flag, indented alike.
    std::vector<absl::string_view> lines = absl::StrSplit(f.help, '\n');
    for (absl::string_view& line : lines) line = absl::StripLeadingAsciiWhitespace(line);
    absl::StrAppend(&out, head, "\n      ", absl::StrJoin(lines, "\n      "));
    // A help text that states its default in words keeps it alone; a switch
    // that is off unless given needs none.
    const bool off_switch = f.kind == Kind::kBool && f.default_text == "false";
    if (!f.default_text.empty() && !off_switch && !absl::StrContains(f.help, "(default"))
      absl::StrAppend(&out, " (default: ", f.default_text, ")");
    if (f.kind == Kind::kRepeated) absl::StrAppend(&out, " (repeatable)");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  --help\n      Print this help and exit.\n");
  return out;
}

}  // namespace serenity
