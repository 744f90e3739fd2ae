// Kubernetes resource quantities for node shapes ("96", "500m", "1.5", "2Ti",
// "512Gi", "64G") as milli-units, the unit placement works in.
//
// A deliberately small parser: decimal mantissa plus one of the suffixes
// m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei. Exponent forms ("1e3") are not
// accepted here; node shapes are written by hand and never need them.
#pragma once

#include <cstdint>
#include <string_view>

#include "gantry/common/status.h"

namespace gantry::inventory::internal {

// Positive quantity in milli-units; kInvalidArgument (message without field
// context) when malformed, zero, negative or beyond int64 milli-units.
Result<int64_t> ParseNodeQuantityMilli(std::string_view text);

}  // namespace gantry::inventory::internal
