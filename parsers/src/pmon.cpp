#include "nvsmi/pmon.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/stream_readings.hpp"
#include "reader_text.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace nvsmi {
namespace {

// Far more rows than any machine prints in one interval (a few dozen GPUs, some hundred processes
// each): a stream that never repeats a (gpu, pid) pair is hostile, not a sample to wait for.
constexpr std::size_t max_sample_rows = 4096;
// nvidia-smi cuts the command to 16 characters, so a row is some hundred bytes; a longer line is
// not a row, and refusing it keeps what a pending sample holds small.
constexpr std::size_t max_line_bytes = 1024;

// pmon prints `-` for a value it does not have; is_unknown does not take it (a leading '-' is a
// negative number there), so it is told apart here.
Reading number(std::string_view token, const std::string &column) {
  if (token == "-")
    return std::nullopt;
  return parse_integer(token, Unit::none, UnitPolicy::optional, column);
}

Text text_value(std::string_view token) {
  if (token == "-")
    return std::nullopt;
  return parse_text(token);
}

// A process's share of the GPU's interval, 0-100 % (nvsmi/stream_readings.hpp).
Reading share(std::string_view token, const std::string &column,
              std::vector<std::string> &dropped) {
  return stream_reading(token, {"pmon", column, "%", StreamRange::share, 1}, dropped);
}

PmonRow read_row(std::string_view line, const std::vector<std::string> &columns,
                 std::vector<std::string> &dropped) {
  PmonRow row;
  std::string_view rest = line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::string &column = columns[i];
    if (column == "command" && i + 1 == columns.size()) {
      // The rest of the line: a name may hold spaces ("NVIDIA Share.exe").
      std::string_view command = trim(rest);
      if (!command.empty())
        row.command = text_value(command);
      rest = {};
      break;
    }
    std::string_view token = next_token(rest);
    if (token.empty())
      throw ParseError("pmon row has no value for column " + column + ": " + excerpt(line));
    if (column == "gpu")
      row.gpu_index = number(token, column);
    else if (column == "pid")
      row.pid = number(token, column);
    else if (column == "type")
      row.type = token == "-" ? std::nullopt : process_type(token, &dropped);
    else if (column == "sm")
      row.sm_percent = share(token, column, dropped);
    else if (column == "mem")
      row.memory_percent = share(token, column, dropped);
    else if (column == "enc")
      row.encoder_percent = share(token, column, dropped);
    else if (column == "dec")
      row.decoder_percent = share(token, column, dropped);
    else if (column == "jpg")
      row.jpeg_percent = share(token, column, dropped);
    else if (column == "ofa")
      row.ofa_percent = share(token, column, dropped);
    else if (column == "fb")
      row.fb_mib = number(token, column); // the unit line says MB; pmon's MB is MiB
    else if (column == "command")
      row.command = text_value(token);
    // Any other column (ccpm, and whatever a later driver adds) is read past.
  }
  if (!trim(rest).empty())
    throw ParseError("pmon row has more values than its " + std::to_string(columns.size()) +
                     " columns: " + excerpt(line));
  return row;
}

} // namespace

PmonReader::Outcome PmonReader::add_line(std::string_view line) {
  Outcome outcome;
  if ((outcome.error = overlong_line("pmon", line, max_line_bytes)))
    return outcome;
  std::string_view content = trim(line);
  if (content.empty())
    return outcome;
  if (content.front() == '#') {
    // Names ("# gpu pid type sm ...") or units ("# Idx # C/G % ..."); pmon prints both again
    // every screenful. Only names set the columns, and reading them again changes nothing.
    std::vector<std::string> names;
    std::string_view rest = content.substr(1);
    for (std::string_view token = next_token(rest); !token.empty(); token = next_token(rest))
      names.emplace_back(token);
    if (std::find(names.begin(), names.end(), "pid") != names.end())
      columns_ = std::move(names);
    return outcome;
  }
  if (columns_.empty()) {
    outcome.error = "pmon row before its header: " + excerpt(content);
    return outcome;
  }
  PmonRow row;
  std::vector<std::string> dropped;
  try {
    row = read_row(content, columns_, dropped);
  } catch (const ParseError &error) {
    outcome.error = error.what();
    return outcome;
  }
  if (!dropped.empty())
    outcome.dropped =
        dropped_line("pmon GPU " + (row.gpu_index ? std::to_string(*row.gpu_index) : "-") +
                         " pid " + (row.pid ? std::to_string(*row.pid) : "-"),
                     dropped);
  auto repeats = [&row](const PmonRow &other) {
    return other.gpu_index == row.gpu_index && other.pid == row.pid;
  };
  if (std::any_of(pending_.begin(), pending_.end(), repeats)) {
    outcome.sample = std::move(pending_);
    pending_.clear();
  } else if (pending_.size() >= max_sample_rows) {
    outcome.error = "pmon sample of more than " + std::to_string(max_sample_rows) +
                    " rows without a repeated (gpu, pid) dropped";
    pending_.clear();
  }
  pending_.push_back(std::move(row));
  return outcome;
}

std::optional<std::vector<PmonRow>> PmonReader::finish() {
  if (pending_.empty())
    return std::nullopt;
  std::vector<PmonRow> sample = std::move(pending_);
  pending_.clear();
  return sample;
}

std::vector<std::vector<PmonRow>> read_pmon(std::string_view text) {
  PmonReader reader;
  std::vector<std::vector<PmonRow>> samples;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    PmonReader::Outcome outcome = reader.add_line(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (outcome.sample)
      samples.push_back(std::move(*outcome.sample));
  }
  if (std::optional<std::vector<PmonRow>> last = reader.finish())
    samples.push_back(std::move(*last));
  return samples;
}

void attach_pmon(Snapshot &snapshot, const std::vector<PmonRow> &sample, RealReading age_seconds) {
  for (const PmonRow &row : sample) {
    if (!row.gpu_index)
      continue;
    auto gpu =
        std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(),
                     [&row](const Gpu &candidate) { return candidate.index == *row.gpu_index; });
    if (gpu == snapshot.gpus.end())
      continue;
    // pmon lists every GPU it watches, with a `-` row where nothing runs: a GPU in the sample
    // has a known list of processes, empty or not.
    if (!gpu->processes)
      gpu->processes.emplace();
    if (!row.pid)
      continue;
    bool found = false;
    for (Process &process : *gpu->processes)
      if (process.pid == row.pid) {
        process.sm_utilization_percent = row.sm_percent;
        process.memory_utilization_percent = row.memory_percent;
        process.utilization_age_seconds = age_seconds;
        // compute-apps lists compute processes only, and so says "C" of each: pmon's type tells
        // the rest of it (C+G, M, M+C). Never one without a compute context (a "G" of pmon's
        // for a process compute-apps saw computing) over it, nor over the XML's own type.
        if (process.type == Text("C") && row.type && has_compute_context(*row.type))
          process.type = row.type;
        found = true;
      }
    if (found)
      continue;
    Process process;
    process.pid = row.pid;
    process.type = row.type;
    process.name = row.command;
    process.used_memory_mib = row.fb_mib;
    process.sm_utilization_percent = row.sm_percent;
    process.memory_utilization_percent = row.memory_percent;
    process.utilization_age_seconds = age_seconds;
    gpu->processes->push_back(std::move(process));
  }
}

} // namespace nvsmi
