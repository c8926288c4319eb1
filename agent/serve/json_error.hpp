// The body every error of the JSON API has: {"error":"..."} and a newline.
#pragma once

#include "serve/http_server.hpp"

#include <string>

namespace nvsmi {

HttpResponse json_error(unsigned status, const std::string &message);

} // namespace nvsmi
