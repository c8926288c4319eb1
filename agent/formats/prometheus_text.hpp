// The pieces of Prometheus's text exposition (0.0.4) that every family is written with: numbers,
// escaped labels, a GPU's labels, and a family's HELP and TYPE before its series.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>

namespace nvsmi {

// Whole numbers as integers (1980000000, not 1.98e+09); others as the shortest exact text.
std::string prometheus_number(double value);

// Appends `name="value"`, the value made valid UTF-8 (Prometheus rejects the whole scrape for one
// label that is not) and escaped; an unknown value appends nothing.
void append_label(std::string &labels, const char *name, const std::string &value);
void append_label(std::string &labels, const char *name, const Text &value);

// gpu (index), uuid and name where known.
std::string gpu_labels(const Gpu &gpu);

// One family: HELP and TYPE, then its series; nothing at all when it has none.
class Family {
public:
  Family(const char *name, const char *help, const char *type = "gauge")
      : name_(name), help_(help), type_(type) {}
  void add(const std::string &labels, std::optional<double> value) {
    if (!value)
      return;
    series_ += name_;
    if (!labels.empty())
      series_ += '{' + labels + '}';
    series_ += ' ' + prometheus_number(*value) + '\n';
  }
  void write(std::string &out) const {
    if (series_.empty())
      return;
    out += "# HELP " + std::string(name_) + ' ' + help_ + '\n';
    out += "# TYPE " + std::string(name_) + ' ' + type_ + '\n';
    out += series_;
  }

private:
  const char *name_, *help_, *type_;
  std::string series_;
};

} // namespace nvsmi
