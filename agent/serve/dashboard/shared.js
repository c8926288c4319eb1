"use strict";
// What the dashboard (/) and the fleet page (/fleet) do alike, in one place: text from a sample
// made safe to show, a GPU's state as a pill, and the utilization and memory bars (shared.css).
// Everything a sample holds (process, user and GPU names, a peer host's answer) is hostile text:
// it goes into the page as textContent, never as markup.

// Text as it is shown: the screen controls of core/screen_text (C0, DEL, C1, the direction marks,
// overrides and isolates that would reverse what follows) become U+FFFD, so that nothing relayed
// is invisible, moves the text around it or reads as anything but text.
function printable(text) {
  return String(text).replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
                              "\ufffd");
}
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = printable(text);
  return node;
}
function known(value) { return value !== null && value !== undefined; }
function stateWord(key) { return String(key || "unknown").replace(/_/g, " "); }
// Only the agent's words become a class: anything else a peer sends is "unknown".
const stateKeys = ["free", "in_use", "idle_but_held", "allocated_idle", "idle", "hot",
                   "at_power_limit", "lost", "failing", "unknown", "stale"];
function statePill(key) {
  const word = stateKeys.includes(key) ? key : "unknown";
  return el("span", "state " + word, stateWord(word));
}

// A bar of `kind` (util or mem) filled to `fraction` (0-1, unknown: empty) with `text` on it.
function bar(kind, fraction, text) {
  const cell = el("div", "bar " + kind);
  const fill = el("span", "fill");
  fill.style.width = known(fraction) ? Math.max(0, Math.min(100, fraction * 100)).toFixed(1) + "%"
                                     : "0";
  cell.append(fill, el("span", "text", text));
  return cell;
}
// The memory bar, red at or over the agent's memory_full_fraction (`thresholds`, the answer of
// /api/v1/thresholds: no number of the page's own).
function memoryBar(used, total, text, thresholds) {
  const fraction = known(used) && total > 0 ? used / total : null;
  const cell = bar("mem", fraction, text);
  if (thresholds && known(fraction) && fraction >= thresholds.memory_full_fraction)
    cell.classList.add("full");
  return cell;
}
