#include "nvidia_smi/command_line.hpp"

#include <stdexcept>

namespace nvsmi {

std::vector<std::string> split_command(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word)
        words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
    } else if (c == '\'') {
      std::size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos)
        throw std::invalid_argument("unclosed ' in command: " + std::string(command));
      word.append(command.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= command.size())
          throw std::invalid_argument("unclosed \" in command: " + std::string(command));
        if (command[i] == '"')
          break;
        if (command[i] == '\\' && i + 1 < command.size() &&
            (command[i + 1] == '"' || command[i + 1] == '\\'))
          ++i;
        word += command[i];
      }
    } else {
      word += c;
    }
  }
  if (in_word)
    words.push_back(std::move(word));
  return words;
}

} // namespace nvsmi
