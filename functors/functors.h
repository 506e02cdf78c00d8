// Umbrella header of the KPS functors.
#pragma once

#include "functors/binary.h"   // IWYU pragma: export
#include "functors/mp_type.h"  // IWYU pragma: export
#include "functors/unary.h"    // IWYU pragma: export
