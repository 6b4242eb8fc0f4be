// Umbrella header of the mxq C++ API.
#pragma once

#include "mxq/api.hpp"
#include "mxq/dtype.hpp"
#include "mxq/error.hpp"
#include "mxq/recipe.hpp"
#include "mxq/tensor.hpp"
