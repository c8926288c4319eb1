// The one name of a process (core/command_text): the script or program a person launched, on
// command lines as /proc gives them for real jobs, and on hostile ones.
#include "core/command_text.hpp"
#include "core/screen_text.hpp"
#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

namespace test_command_text {

using namespace nvsmi;

namespace {

std::string named(std::string_view command) { return launched_name(command).value_or("(unknown)"); }

} // namespace

TEST_CASE("a process is named by the script or program a person launched") {
  // python, however started
  CHECK(named("python3 train.py --model llama-8b --seconds 3600") == "train.py");
  CHECK(named("/usr/bin/python3 -u /home/a/train.py --model x") == "train.py");
  CHECK(named("/opt/conda/envs/x/bin/python3.11 -W ignore -X dev x/y.py") == "y.py");
  CHECK(named("python -Wignore -OO -B eval.py") == "eval.py");
  CHECK(named("python3 -- -odd.py") == "-odd.py"); // a script named like an option
  CHECK(named("/home/a/.venv/bin/python3 /home/a/.venv/bin/vllm serve meta-llama/x") == "vllm");
  // python -m: the package; a launcher module by the script it starts
  CHECK(named("python3 -m vllm.entrypoints.api_server --seconds 3600") == "vllm");
  CHECK(named("python -m sglang.launch_server --model-path x") == "sglang");
  CHECK(named("python3 -um vllm.entrypoints.openai.api_server") == "vllm");
  CHECK(named("python3 -mpytest tests/") == "pytest");
  CHECK(named("/usr/bin/python3 -m ipykernel_launcher -f /root/k.json") == "ipykernel_launcher");
  CHECK(named("python3 -m torch.distributed.run --nproc-per-node 8 t.py --lr 1") == "t.py");
  CHECK(named("python -u -m torch.distributed.launch --nproc_per_node=8 /w/train.py") ==
        "train.py");
  CHECK(named("python -u -m deepspeed.launcher.launch --world_info=e30= --master_addr "
              "127.0.0.1 --master_port 29500 train.py --deepspeed ds.json") == "train.py");
  // launchers
  CHECK(named("torchrun --nproc-per-node 1 finetune.py --seconds 3600") == "finetune.py");
  CHECK(named("/usr/bin/python3 /usr/local/bin/torchrun --nnodes 2 --rdzv-endpoint h:29400 "
              "pretrain.py") == "pretrain.py");
  CHECK(named("torchrun --standalone -m llama.train --cfg a.yaml") == "llama");
  CHECK(named("torchrun --nproc-per-node 8") == "torchrun");
  CHECK(named("/usr/bin/python3 /usr/local/bin/accelerate launch --mixed_precision bf16 "
              "--num_processes 8 sft.py --epochs 3") == "sft.py");
  CHECK(named("accelerate config") == "accelerate");
  CHECK(named("deepspeed --num_gpus 8 train.py --deepspeed ds_config.json") == "train.py");
  // shells and other interpreters
  CHECK(named("bash run.sh") == "run.sh");
  CHECK(named("/bin/bash -o pipefail ./go.sh a") == "go.sh");
  CHECK(named("bash +o history -x /srv/job.sh") == "job.sh");
  CHECK(named("sh -c python3 train.py --db-password=hunter2") == "sh");
  CHECK(named("bash -xc python3 secret.py") == "bash");
  CHECK(named("java -Xmx4g -cp /opt/lib -jar /opt/app.jar serve") == "app.jar");
  CHECK(named("/usr/bin/perl -I lib /srv/job.pl") == "job.pl");
  CHECK(named("perl -Mstrict -lane print") == "perl");
  CHECK(named("ruby -rjson run.rb") == "run.rb");
  CHECK(named("node --require ts-node/register /app/main.ts") == "main.ts");
  CHECK(named("/usr/lib/R/bin/Rscript --vanilla fit.R") == "fit.R");
  CHECK(named("/usr/bin/env CUDA_VISIBLE_DEVICES=1 python3 serve.py") == "serve.py");
  CHECK(named("env -u HOME -i python3 serve.py") == "serve.py");
  // code rather than a script, or nothing: the interpreter itself
  CHECK(named("python3 -c import time; time.sleep(300) --db-password=hunter2") == "python3");
  CHECK(named("python3 -uc print('hunter2')") == "python3");
  CHECK(named("/usr/bin/python3") == "python3");
  CHECK(named("python3 -") == "python3");
  // a program of its own
  CHECK(named("/opt/llama.cpp/llama-server -m /models/x.gguf --port 8080") == "llama-server");
  CHECK(named("/usr/local/bin/ollama runner --model /root/.ollama/blobs/sha256-x") == "ollama");
  CHECK(named("vllm serve") == "vllm");
  CHECK(named("[python3]") == "[python3]"); // a process without arguments, as ps shows it
  CHECK(named("/usr/bin/env") == "env");
  CHECK(named("/") == "/");
}

TEST_CASE("an empty command line names nothing; hostile bytes come out printable and bounded") {
  CHECK_FALSE(launched_name(""));
  CHECK_FALSE(launched_name("   "));
  // Escapes, a newline in a path, bytes that are not UTF-8, a right-to-left override.
  std::string hostile = "python3 /tmp/\x1b[2J\x1b]0;owned\x07x\ny\xff\xe2\x80\xae.py --a";
  std::string name = named(hostile);
  CHECK(is_valid_utf8(name));
  CHECK(name == printable_text(name));        // nothing a screen would change
  CHECK(name.find(' ') == std::string::npos); // no space it did not have
  CHECK(name.find('\x1b') == std::string::npos);
  CHECK(name.find("\xe2\x80\xae") == std::string::npos);
  CHECK_THAT(name, Catch::StartsWith("\uFFFD[2J\uFFFD]0;owned\uFFFDx\uFFFDy\uFFFD"));
  // A huge script name: cut to its columns, ending in an ellipsis.
  std::string huge = named("python3 /x/" + std::string(5000, 'a') + ".py");
  CHECK(text_columns(huge) == launched_name_columns);
  CHECK_THAT(huge, Catch::EndsWith("\u2026"));
  // A name is itself: named again, it stays (serve cuts a command line to it).
  for (const char *command :
       {"python3 -m vllm.entrypoints.api_server", "torchrun x.py", "bash -c a", "/usr/bin/python3"})
    CHECK(named(named(command)) == named(command));
  CHECK(named(hostile) == named(named(hostile)));
  CHECK(named(huge) == huge);
}

TEST_CASE("top shows the launched name and the arguments that follow it") {
  CHECK(shown_command("/usr/bin/python3 -u /home/a/train.py --lr 1") == "train.py --lr 1");
  CHECK(shown_command("python3 train.py") == "train.py");
  CHECK(shown_command("python3 -m torch.distributed.run --nproc 8 t.py --x") == "t.py --x");
  CHECK(shown_command("python3 -m vllm.entrypoints.api_server --port 1") == "vllm --port 1");
  CHECK(shown_command("python3 -c import os") == "python3 -c import os");
  CHECK(shown_command("java -Xmx4g -jar /opt/app.jar serve") == "app.jar serve");
  CHECK(shown_command("sh -c sleep 1") == "sh -c sleep 1");
  CHECK(shown_command("/usr/bin/torchrun --nproc 8 train.py") == "train.py");
  CHECK(shown_command("torchrun --nproc 8") == "torchrun --nproc 8");
  CHECK(shown_command("vllm serve") == "vllm serve");
  CHECK(shown_command("") == "");
}

TEST_CASE("a GPU process is named by its command line, else by nvidia-smi's name for it") {
  Process process;
  CHECK_FALSE(process_name(process)); // neither known: unknown
  process.name = "/usr/bin/torchrun";
  CHECK(process_name(process) == "torchrun");
  process.name = "vllm serve";
  CHECK(process_name(process) == "vllm");
  process.name = "C:\\Program Files\\Blender Foundation\\Blender 4.2\\blender.exe";
  CHECK(process_name(process) == "blender.exe");
  // The command line wins; an empty one names nothing, not nvidia-smi's name.
  process.command = "python3 -u train.py";
  CHECK(process_name(process) == "train.py");
  process.command = "";
  CHECK_FALSE(process_name(process));
}

} // namespace test_command_text
