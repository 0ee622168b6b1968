// Text inside an SVG document (the plots: memory_plot.h, pareto_plot.h).
#ifndef SERENITY_CLIENT_SVG_TEXT_H_
#define SERENITY_CLIENT_SVG_TEXT_H_

#include <string>

namespace serenity {

// `text` with &, <, > and " written as XML entities, safe inside an element
// and inside a double-quoted attribute.
std::string SvgEscape(const std::string& text);

}  // namespace serenity

#endif  // SERENITY_CLIENT_SVG_TEXT_H_
