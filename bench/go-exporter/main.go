// What people's Go exporters do with nvidia-smi, for bench/snapshot-cost to count beside the
// agent: `nvidia-smi -q -x` decoded by encoding/xml into structs, the readings that the agent's
// legacy format prints (each GPU's temperature, memory used of total, percent used), JSON out.
// It reads the XML from a file, as the agent's --fixture does, so that both count the same work.
// Usage: go-exporter FILE
package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"strconv"
	"strings"
)

type smiLog struct {
	GPUs []struct {
		Temperature struct {
			GPU string `xml:"gpu_temp"`
		} `xml:"temperature"`
		Memory struct {
			Total string `xml:"total"`
			Used  string `xml:"used"`
		} `xml:"fb_memory_usage"`
	} `xml:"gpu"`
}

type reading struct {
	Data []string `json:"data"`
	Name int      `json:"name"`
}

// "30 C" as 30; false for "N/A" and the like.
func quantity(text, unit string) (float64, bool) {
	number := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), unit))
	value, err := strconv.ParseFloat(number, 64)
	return value, err == nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-exporter FILE")
		os.Exit(2)
	}
	file, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-exporter:", err)
		os.Exit(1)
	}
	defer file.Close()
	var log smiLog
	if err := xml.NewDecoder(file).Decode(&log); err != nil {
		fmt.Fprintln(os.Stderr, "go-exporter:", err)
		os.Exit(1)
	}
	out := map[string][]reading{"temp": {}, "usage": {}, "usedPercent": {}}
	for index, gpu := range log.GPUs {
		if celsius, ok := quantity(gpu.Temperature.GPU, "C"); ok {
			text := strconv.FormatFloat(celsius, 'f', -1, 64)
			out["temp"] = append(out["temp"], reading{[]string{text, text + "C"}, index})
		}
		used, usedOk := quantity(gpu.Memory.Used, "MiB")
		total, totalOk := quantity(gpu.Memory.Total, "MiB")
		if usedOk && totalOk {
			u, t := strconv.FormatFloat(used, 'f', -1, 64), strconv.FormatFloat(total, 'f', -1, 64)
			out["usage"] = append(out["usage"], reading{[]string{u, u + "MiB/" + t + "MiB"}, index})
			if total > 0 {
				percent := fmt.Sprintf("%.2f", used/total*100)
				out["usedPercent"] = append(out["usedPercent"],
					reading{[]string{percent, percent + "%"}, index})
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "go-exporter:", err)
		os.Exit(1)
	}
}
