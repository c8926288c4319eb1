// `nvidia-smi dmon`: a scrolling table, one row per GPU each interval, under two `#` lines that
// name the columns and give their units ("# gpu pwr ... smutil" / "# Idx W ... GPM:%"); with
// `--format csv` the same lines with ", " between cells. Which columns appear depends on `-s` and
// `--gpm-metrics`; unknown readings are `-` (GPM's first interval) or N/A.
//
// The reader reads only columns it knows, by name and unit: a header naming a column it does not
// know, or a known one in another unit, is refused with a message that names it, and the rows
// under it are not read until a header it knows comes (a guessed column would put one figure
// under another's name).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// One GPU's row: the activity and traffic figures the agent takes from dmon. The other columns
// dmon prints (power, temperatures, utilization, clocks, memory, ECC: the GPU query has them) are
// known and read past.
struct DmonRow {
  Reading gpu_index;
  // GPM (Hopper and newer): shares of the interval, 0-100.
  Reading sm_active_percent;     // smutil: SMs with at least one warp resident
  Reading sm_occupancy_percent;  // smocc: resident warps over the SMs' maximum
  Reading tensor_active_percent; // mmaact: any tensor pipe
  Reading dram_active_percent;   // dram: DRAM bandwidth in use
  Reading fp16_active_percent, fp32_active_percent, fp64_active_percent;
  // Bytes per second: `-s t` (rxpci/txpci, printed in MB/s, which nvidia-smi means as MiB/s as
  // for every MB it prints) and GPM's NVLink totals (nvlrx/nvltx, GPM:MiB/s).
  Reading pcie_rx_bytes_per_second, pcie_tx_bytes_per_second;
  Reading nvlink_rx_bytes_per_second, nvlink_tx_bytes_per_second;
};

class DmonReader {
public:
  struct Outcome {
    std::optional<DmonRow> row;       // the row this line held
    std::optional<std::string> error; // the line could not be read (it is skipped), or a header
                                      // was refused
    // The row was read without the figures this says, each out of its range (a share past 100 %,
    // a rate below 0: nvsmi/stream_readings.hpp): those are unknown in `row`.
    std::optional<std::string> dropped;
  };
  Outcome add_line(std::string_view line);

  // Where each column's value goes; public for the reader's table.
  enum class Target {
    skip,
    gpu_index,
    sm_active,
    sm_occupancy,
    tensor_active,
    dram_active,
    fp16_active,
    fp32_active,
    fp64_active,
    pcie_rx,
    pcie_tx,
    nvlink_rx,
    nvlink_tx
  };
  struct Column {
    Target target = Target::skip;
    std::int64_t scale = 1; // to bytes per second for traffic
    std::string name;       // as the header names it, for messages
    std::string unit;       // as the header gives it ("%" for GPM's "GPM:%"), for messages
  };

private:
  std::vector<std::string> names_; // the names line, waiting for its units line
  std::vector<Column> columns_;
  bool csv_ = false;
};

// Each row's figures onto the sample's GPU of that index (the others untouched). Traffic dmon
// does not know leaves what the sample has (the XML's PCIe throughput) as it is.
void attach_dmon(Snapshot &snapshot, const std::vector<DmonRow> &rows);

// Every row of a finite output (`dmon -c N`); a refused header or a bad row throws ParseError (a
// figure out of its range is dropped from its row, unknown).
std::vector<DmonRow> read_dmon(std::string_view text);

} // namespace nvsmi
