#include "serve/json_error.hpp"

#include "formats/json_writer.hpp"

namespace nvsmi {

HttpResponse json_error(unsigned status, const std::string &message) {
  std::string body;
  JsonWriter json(body);
  json.begin_object();
  json.key("error");
  json.value(message);
  json.end_object();
  body += '\n';
  return {status, "application/json", std::make_shared<const std::string>(std::move(body)), {}, {}};
}

} // namespace nvsmi
