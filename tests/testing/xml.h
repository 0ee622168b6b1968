// A small XML check for the SVG plots' tests.
#ifndef SERENITY_TESTS_TESTING_XML_H_
#define SERENITY_TESTS_TESTING_XML_H_

#include <string>

namespace serenity::testing {

// True when every element opened is closed in order (tags, self-closing
// tags, declarations) and every attribute value is quoted.
bool IsWellFormedXml(const std::string& xml);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_XML_H_
