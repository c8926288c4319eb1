// The pieces of Prometheus's text exposition (0.0.4) that every family is written with: numbers,
// escaped labels, a GPU's labels, and a family's HELP and TYPE before its series.
#pragma once

#include "formats/prometheus_selection.hpp"

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <set>
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

// A yes/no reading as a sample's value: 1 or 0; unknown stays unknown (no series).
inline std::optional<double> flag_value(const std::optional<bool> &value) {
  if (!value)
    return std::nullopt;
  return *value ? 1.0 : 0.0;
}

// Where the families are written: the text, and which families the selection lets in. Every family
// passes here by name, so that the allow-list is checked against the families the writers have,
// not a list of them kept by hand (metric_family_names).
struct MetricsOut {
  explicit MetricsOut(const MetricsSelection &chosen) : selection(chosen) {}
  // Whether the family `name` is written; it is noted in `offered` where that is set.
  bool writes(const char *name) {
    if (offered)
      offered->insert(name);
    return selection.includes(name);
  }

  const MetricsSelection &selection;
  std::string text;
  std::set<std::string> *offered = nullptr;
};

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
  void write(MetricsOut &out) const {
    if (!out.writes(name_) || series_.empty())
      return;
    out.text += "# HELP " + std::string(name_) + ' ' + help_ + '\n';
    out.text += "# TYPE " + std::string(name_) + ' ' + type_ + '\n';
    out.text += series_;
  }

private:
  const char *name_, *help_, *type_;
  std::string series_;
};

} // namespace nvsmi
