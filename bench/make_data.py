#!/usr/bin/env python3
"""Writes the benchmark inputs into DIR, made from the fixtures: XML of 1, 8 and 64 H100s (the
8-GPU recording with its <gpu> blocks cut down or repeated, bus ids and UUIDs kept distinct) and
the same 8 GPUs as CSV, with a header and without (as `watch` reads it)."""
import re
import shutil
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)

document = (root / "fixtures/xml/h100-8gpu-v12.xml").read_text()
blocks = list(re.finditer(r"\t<gpu id=.*?</gpu>\n", document, re.S))
head, tail = document[: blocks[0].start()], document[blocks[-1].end():]


def gpu(number):
    """GPU `number`: block number % 8, in PCI domain number // 8, with its own UUID."""
    block = blocks[number % len(blocks)].group(0)
    block = re.sub(r"0000(0000):([0-9A-F]{2}:00\.0)", f"0000{number // 8:04X}:\\2", block)
    return re.sub(r"(<uuid>GPU-[0-9a-f-]{24})[0-9a-f]{12}", f"\\g<1>{number:012x}", block)


for count in (1, 8, 64):
    body = "".join(gpu(n) for n in range(count))
    text = re.sub(r"<attached_gpus>\d+", f"<attached_gpus>{count}", head) + body + tail
    (out / f"xml-{count}gpu.xml").write_text(text)
shutil.copy(root / "fixtures/csv/h100-8gpu-nounits.csv", out / "csv-8gpu.csv")
shutil.copy(root / "fixtures/csv/h100-8gpu-noheader-nounits.csv", out / "csv-8gpu-noheader.csv")
