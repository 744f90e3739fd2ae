// Names the calling thread, so `top -H`, `ps -L` and profilers show which of
// gantry's threads is busy. Linux keeps at most 15 characters; longer names
// are cut.
#pragma once

#include <string_view>

namespace gantry {

void SetThreadName(std::string_view name);

}  // namespace gantry
