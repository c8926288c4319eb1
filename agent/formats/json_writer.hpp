#pragma once

#include "nvsmi/utf8.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// Writes JSON text straight into a string, in the order it is called: building an nlohmann tree
// first cost a heap node and a key search per field, over a third of a whole 8-GPU XML snapshot
// (docs/PERFORMANCE.md). It does not check the calls' nesting: the formats are fixed shapes.
class JsonWriter {
public:
  explicit JsonWriter(std::string &out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view name) {
    separate();
    string(name);
    out_ += ':';
    after_key_ = true;
  }

  void null() { scalar("null"); }
  void value(bool flag) { scalar(flag ? "true" : "false"); }
  void value(std::int64_t number) {
    separate();
    char buffer[24];
    out_.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, number).ptr);
  }
  void value(int number) { value(static_cast<std::int64_t>(number)); }
  void value(double number) {
    if (number == 0)
      number = 0; // -0.0 as well: a zero is never written "-0.0"
    separate();
    char buffer[32];
    char *end = std::to_chars(buffer, buffer + sizeof buffer, number).ptr;
    out_.append(buffer, end);
    // As nlohmann_json wrote it before: a whole number keeps ".0" so that it stays a double.
    if (std::string_view(buffer, static_cast<std::size_t>(end - buffer)).find_first_of(".eEn") ==
        std::string_view::npos)
      out_ += ".0";
  }
  void value(const std::string &text) {
    separate();
    string(text);
  }
  template <typename T> void value(const std::optional<T> &maybe) {
    if (maybe)
      value(*maybe);
    else
      null();
  }
  // A value that is already JSON text (another format's whole document), as it is.
  void json_text(std::string_view json) {
    separate();
    out_ += json;
  }
  void value(const std::vector<std::string> &texts) {
    begin_array();
    for (const std::string &text : texts)
      value(text);
    end_array();
  }

private:
  void open(char bracket) {
    separate();
    out_ += bracket;
    first_ = true;
  }
  void close(char bracket) {
    out_ += bracket;
    first_ = false;
  }
  void scalar(const char *text) {
    separate();
    out_ += text;
  }
  void separate() {
    if (after_key_)
      after_key_ = false;
    else if (!first_)
      out_ += ',';
    first_ = false;
  }
  // Plain printable ASCII is copied; anything else goes the slow way (escaped). `watch --format
  // json` writes some 760 strings a sample on 8 GPUs, keys included: a test of four comparisons
  // a byte, in a function that had nlohmann_json's dump inlined into it, made this a third of a
  // sample's instructions (docs/PERFORMANCE.md, "watch against Netdata's collector").
  void string(std::string_view text) {
    if (!plain(text)) {
      escaped(text);
      return;
    }
    out_ += '"';
    out_.append(text.data(), text.size());
    out_ += '"';
  }
  // Whether every byte is printable ASCII other than '"' and '\\': four looked up a step.
  static bool plain(std::string_view text) {
    const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
    std::size_t size = text.size(), at = 0;
    for (; at + 4 <= size; at += 4)
      if (!(plain_byte[bytes[at]] & plain_byte[bytes[at + 1]] & plain_byte[bytes[at + 2]] &
            plain_byte[bytes[at + 3]]))
        return false;
    for (; at < size; ++at)
      if (!plain_byte[bytes[at]])
        return false;
    return true;
  }
  // Made valid UTF-8 (a process name can hold any byte) and escaped by nlohmann_json, which
  // escapes the C0 controls; the C1 ones (U+0080-U+009F, among them the 8-bit CSI that some
  // terminals act on) are escaped here too, so that the JSON is printable wherever it is shown.
  [[gnu::noinline]] void escaped(std::string_view text) {
    std::string dumped = nlohmann::json(valid_utf8(text)).dump();
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t at = 0; at < dumped.size(); ++at) {
      auto byte = static_cast<unsigned char>(dumped[at]);
      auto next = at + 1 < dumped.size() ? static_cast<unsigned char>(dumped[at + 1]) : 0;
      if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) {
        out_ += "\\u00";
        out_ += hex[next >> 4];
        out_ += hex[next & 0xf];
        ++at;
      } else {
        out_ += dumped[at];
      }
    }
  }
  static constexpr std::array<unsigned char, 256> plain_byte = [] {
    std::array<unsigned char, 256> table{};
    for (int c = 0x20; c < 0x7f; ++c)
      table[c] = c != '"' && c != '\\';
    return table;
  }();

  std::string &out_;
  bool first_ = true, after_key_ = false;
};

} // namespace nvsmi
