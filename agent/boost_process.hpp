// Boost.Process v2 as shipped in Boost 1.81, header-only on std::filesystem. Its config header
// forgets <boost/optional.hpp> and <boost/type_traits.hpp> in that mode, so they come first here.
#pragma once

#include <boost/optional.hpp>
#include <boost/type_traits.hpp>

#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
