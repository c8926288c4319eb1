// What reading nvidia-smi's `-q -x` loop costs before the agent does anything with it: a reference
// for bench/netdata-compare, which runs it beside the agent and the collector. It reads the
// documents from standard input as the agent does (poll, 64 KiB reads appended to one buffer, each
// document's end found with memmem in the new bytes only), and per document either drops it
// (`read`) or parses it whole with pugixml, in place, and drops the tree (`parse`); it writes one
// short line per document, so that documents can be counted, and reads nothing else.
//
// Usage: xml_read_floor read|parse < documents
#include <pugixml.hpp>

#include <cstdio>
#include <cstring>
#include <poll.h>
#include <string>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2 || (std::strcmp(argv[1], "read") != 0 && std::strcmp(argv[1], "parse") != 0)) {
    std::fprintf(stderr, "usage: xml_read_floor read|parse < documents\n");
    return 2;
  }
  const bool parse = std::strcmp(argv[1], "parse") == 0;
  static constexpr char end_tag[] = "</nvidia_smi_log>";
  constexpr std::size_t end_size = sizeof end_tag - 1;
  std::string held;
  static char chunk[1 << 16];
  for (long documents = 0;;) {
    pollfd ready{STDIN_FILENO, POLLIN, 0};
    if (::poll(&ready, 1, -1) < 0)
      return 1;
    ssize_t got = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (got <= 0)
      return got == 0 ? 0 : 1;
    std::size_t from = held.size() >= end_size ? held.size() - (end_size - 1) : 0;
    held.append(chunk, static_cast<std::size_t>(got));
    const void *end = ::memmem(held.data() + from, held.size() - from, end_tag, end_size);
    if (!end)
      continue;
    std::size_t document = static_cast<const char *>(end) - held.data() + end_size;
    if (parse) {
      pugi::xml_document tree;
      if (!tree.load_buffer_inplace(held.data(), document))
        return 1;
    }
    held.erase(0, document);
    char line[32];
    int length = std::snprintf(line, sizeof line, "%ld\n", ++documents);
    if (::write(STDOUT_FILENO, line, static_cast<std::size_t>(length)) != length)
      return 1;
  }
}
