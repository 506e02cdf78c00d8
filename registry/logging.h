// The one place KPS includes glog, so the logging backend could be swapped. Include it
// from .cc files only: public headers stay free of glog.
#pragma once

#include <glog/logging.h>  // IWYU pragma: export

#define KPS_CHECK(cond) CHECK(cond)
#define KPS_LOG(severity) LOG(severity)
