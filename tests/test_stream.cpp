#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_stream {

using namespace nvsmi;

TEST_CASE("lines are cut across chunks, CR dropped") {
  LineSplitter lines(100);
  StreamPieces out;
  lines.feed("first li", out);
  CHECK(out.pieces.empty());
  lines.feed("ne\r\nsecond\nthi", out);
  CHECK(out.pieces == std::vector<std::string>{"first line", "second"});
  CHECK(lines.reset()); // "thi" was a partial line
  CHECK_FALSE(lines.reset());
}

TEST_CASE("a line over the cap is skipped, not stored") {
  LineSplitter lines(10);
  StreamPieces out;
  lines.feed("0123456789ABCDEF", out);
  lines.feed("GHIJ\nok\n", out);
  CHECK(out.pieces == std::vector<std::string>{"ok"});
  CHECK(out.errors.size() == 1);
}

TEST_CASE("XML documents are cut from a stream, whatever the chunk size") {
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  std::string stream = one + "\n" + one + one;
  for (std::size_t chunk : {1u, 7u, 4096u, 1u << 20}) {
    INFO("chunk " << chunk);
    XmlDocumentSplitter splitter(1 << 20);
    StreamPieces out;
    for (std::size_t at = 0; at < stream.size(); at += chunk)
      splitter.feed(std::string_view(stream).substr(at, chunk), out);
    REQUIRE(out.pieces.size() == 3);
    CHECK(out.pieces[1] == std::string(trim(one)));
    CHECK(out.errors.empty());
    CHECK_FALSE(splitter.reset());
  }
}

TEST_CASE(
    "XML documents one read each, as nvidia-smi's loop writes them: each whole, nothing left") {
  // The piece is then what the splitter held, handed on rather than copied: the same bytes.
  std::string one = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  XmlDocumentSplitter splitter(1 << 20);
  StreamPieces out;
  for (const std::string &read : {one + "\n", one + "\n", " \n" + one, one + "\n\n  <?xml"}) {
    splitter.feed(read, out);
    CHECK(out.errors.empty());
  }
  REQUIRE(out.pieces.size() == 4);
  for (const std::string &piece : out.pieces)
    CHECK(piece == std::string(trim(one)));
  CHECK(splitter.pending() == "<?xml");
  splitter.feed(one.substr(5) + "\n", out); // the rest of that last one
  REQUIRE(out.pieces.size() == 5);
  CHECK(out.pieces[4] == std::string(trim(one)));
  CHECK(splitter.pending().empty());
  CHECK_FALSE(splitter.reset());
}

TEST_CASE("an XML document over the cap is skipped, the next one is kept") {
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  std::string huge =
      "<?xml version=\"1.0\" ?><nvidia_smi_log>" + std::string(100000, ' ') + "</nvidia_smi_log>";
  XmlDocumentSplitter splitter(one.size() + 10);
  StreamPieces out;
  std::string stream = huge + one;
  for (std::size_t at = 0; at < stream.size(); at += 4096)
    splitter.feed(std::string_view(stream).substr(at, 4096), out);
  CHECK(out.errors.size() == 1);
  REQUIRE(out.pieces.size() == 1);
  CHECK(out.pieces[0] == std::string(trim(one)));
}

TEST_CASE("CSV rows become one sample per loop iteration") {
  CsvSampleAssembler assembler(
      CsvLayout::from_fields({"timestamp", "count", "index", "memory.used"}));
  CHECK_FALSE(assembler.add_line("2024/03/12 14:03:27.512, 2, 0, 10").sample);
  auto first = assembler.add_line("2024/03/12 14:03:27.514, 2, 1, 11");
  REQUIRE(first.sample);
  CHECK(first.sample->gpus.size() == 2);
  CHECK(first.sample->gpus[1].memory_used_mib == 11);
  // A partial sample (the child died after one row) is dropped when a new one begins.
  CHECK_FALSE(assembler.add_line("2024/03/12 14:03:28.512, 2, 0, 20").sample);
  auto restarted = assembler.add_line("2024/03/12 14:03:29.512, 2, 0, 30");
  CHECK(restarted.error);
  CHECK_FALSE(restarted.sample);
  auto second = assembler.add_line("2024/03/12 14:03:29.514, 2, 1, 31");
  REQUIRE(second.sample);
  CHECK(second.sample->gpus[0].memory_used_mib == 30);
}

TEST_CASE("a bad CSV line drops its sample and the stream goes on") {
  CsvSampleAssembler assembler(CsvLayout::from_fields({"count", "index", "memory.used"}));
  auto bad = assembler.add_line("1, 0, 12 KiB");
  CHECK(bad.error);
  CHECK_FALSE(bad.sample);
  CHECK(assembler.add_line("\x01\x02garbage").error);
  CHECK(assembler.add_line("1, 0, 12").sample);
}

TEST_CASE("a header line sets the columns") {
  CsvSampleAssembler assembler(CsvLayout::from_fields({"count", "index"}));
  CHECK_FALSE(assembler.add_line("index, count, memory.used [MiB]").error);
  auto sample = assembler.add_line("0, 1, 77 MiB").sample;
  REQUIRE(sample);
  CHECK(sample->gpus[0].memory_used_mib == 77);
}

TEST_CASE("garbage between XML documents costs no document") {
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  XmlDocumentSplitter splitter(1 << 20);
  StreamPieces out;
  splitter.feed(one + "\x01\x02 garbage ]]> <<\n" + one, out);
  REQUIRE(out.pieces.size() == 2);
  CHECK(out.pieces[1] == std::string(trim(one)));
  CHECK(out.errors.size() == 1);
}

TEST_CASE(
    "a document cut short before a whole one: the whole one is the piece, from its last start") {
  std::string one = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  std::string bare = "<nvidia_smi_log><gpu></gpu></nvidia_smi_log>";
  for (std::size_t chunk : {std::size_t(1) << 20, std::size_t(4096), std::size_t(7)}) {
    INFO("chunks of " << chunk);
    XmlDocumentSplitter splitter(1 << 20);
    StreamPieces out;
    // The first cut short twice (two starts, no end), then a whole one; then a bare one cut short
    // (no declaration) before a whole bare one.
    std::string stream = one.substr(0, 500) + one.substr(0, 9000) + one + bare.substr(0, 20) + bare;
    for (std::size_t at = 0; at < stream.size(); at += chunk)
      splitter.feed(std::string_view(stream).substr(at, chunk), out);
    REQUIRE(out.pieces.size() == 2);
    CHECK(out.pieces[0] == std::string(trim(one)));
    CHECK(out.pieces[1] == bare);
    CHECK(out.errors.size() == 2);
  }
}

TEST_CASE("the lines naming GPUs nvidia-smi cannot read stay before their document") {
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  std::string lines = "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\n"
                      "\nUnable to determine the device handle for GPU0000:07:00.0: GPU is lost\n";
  XmlDocumentSplitter splitter(1 << 20);
  StreamPieces out;
  splitter.feed(lines + one + "\n" + lines + one + "\nnot such a line\n" + lines + one, out);
  REQUIRE(out.pieces.size() == 3);
  CHECK(out.pieces[0] == std::string(trim(lines + one)));
  CHECK(out.pieces[1] == std::string(trim(lines + one)));
  // With anything else before it, all of that is garbage, as before.
  CHECK(out.pieces[2] == std::string(trim(one)));
  CHECK(out.errors.size() == 1);
}

TEST_CASE("a CSV sample past its GPU count or its byte limit is dropped, not gathered") {
  CsvSampleLimits limits;
  limits.max_gpus = 4;
  limits.max_bytes = 20;
  CsvSampleAssembler assembler(CsvLayout::from_fields({"count", "index", "memory.used"}), limits);
  // A `count` that no sample reaches, with a rising index: every row is refused at once.
  for (int index = 0; index < 1000; ++index) {
    auto outcome = assembler.add_line("999999999, " + std::to_string(index) + ", 10");
    REQUIRE(outcome.error);
    CHECK_THAT(*outcome.error, Catch::Contains("999999999 is past the 4 GPUs"));
    CHECK_FALSE(outcome.sample);
  }
  CHECK_FALSE(assembler.reset()); // nothing was kept
  // Rows within the count whose text passes the byte limit drop their sample.
  CHECK_FALSE(assembler.add_line("4, 0, 10").error); // 8 bytes
  CHECK_FALSE(assembler.add_line("4, 1, 10").error);
  auto too_big = assembler.add_line("4, 2, 10");
  REQUIRE(too_big.error);
  CHECK_THAT(*too_big.error, Catch::Contains("sample larger than 20 bytes"));
  CHECK_FALSE(assembler.reset());
  // And the stream goes on.
  CHECK_FALSE(assembler.add_line("2, 0, 10").sample);
  auto sample = assembler.add_line("2, 1, 11").sample;
  REQUIRE(sample);
  CHECK(sample->gpus.size() == 2);
}

TEST_CASE("an XML document that never ends holds no more than the cap") {
  const std::size_t cap = 1 << 20, chunk = 65536;
  XmlDocumentSplitter splitter(cap);
  StreamPieces out;
  splitter.feed("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n", out);
  std::string gpus;
  while (gpus.size() < chunk)
    gpus += "<gpu><product_name>NVIDIA H100</product_name></gpu>\n";
  for (int i = 0; i < 200; ++i) { // 13 MiB, 13 times the cap
    splitter.feed(gpus, out);
    CHECK(splitter.pending().size() <= cap + gpus.size());
  }
  CHECK(out.errors.size() == 1);
  CHECK(out.pieces.empty());
  // Its end, when it comes, ends the skipping; the next document is read.
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  splitter.feed("</nvidia_smi_log>\n" + one, out);
  REQUIRE(out.pieces.size() == 1);
  CHECK(out.pieces[0] == std::string(trim(one)));
}

TEST_CASE("what follows the last XML document is kept for the exit message") {
  std::string one = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  XmlDocumentSplitter splitter(1 << 20);
  StreamPieces out;
  splitter.feed(one + "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                      "driver.\n",
                out);
  CHECK(out.pieces.size() == 1);
  CHECK(trim(splitter.pending()) ==
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.");
}

} // namespace test_stream
