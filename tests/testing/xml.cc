#include "tests/testing/xml.h"

#include <algorithm>
#include <string>
#include <vector>

namespace serenity::testing {

bool IsWellFormedXml(const std::string& xml) {
  std::vector<std::string> open;
  for (size_t i = xml.find('<'); i != std::string::npos; i = xml.find('<', i + 1)) {
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.empty()) return false;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return false;
    if (tag.back() == '/') continue;
    std::string name = tag.substr(tag[0] == '/' ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \n\t"));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  return open.empty();
}

}  // namespace serenity::testing
