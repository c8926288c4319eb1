// read_xml_in_place (the stream's way, in the caller's buffer) must read exactly what read_xml
// reads, the error message included, on every recording and every prefix of one; and what pugixml
// takes for markup (comments, CDATA, processing instructions, attribute values) is never read as a
// reading.
#include "formats/formats.hpp"
#include "support.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

namespace test_xml_in_place {

using namespace nvsmi;

namespace {

// The outcome of one read as text: the typed JSON of the snapshot, or the error message.
template <typename Read> std::string outcome_of(Read read) {
  try {
    return format_json(read());
  } catch (const ParseError &error) {
    return std::string("ParseError: ") + error.what();
  }
}

std::string outcome(const std::string &document) {
  return outcome_of([&] { return read_xml(document); });
}

std::string outcome_in_place(std::string document) {
  return outcome_of([&] { return read_xml_in_place(document.data(), document.size()); });
}

void check_same(const std::string &document) {
  CHECK(outcome(document) == outcome_in_place(document));
}

std::vector<std::string> files_in(const std::string &folder) {
  std::vector<std::string> files;
  if (std::filesystem::is_directory(folder))
    for (const auto &entry : std::filesystem::directory_iterator(folder))
      files.push_back(entry.path());
  return files;
}

} // namespace

TEST_CASE("XML read in place reads the same as from a view: fixtures, corpus and their prefixes") {
  std::vector<std::string> files = files_in(test::fixture_path("xml"));
  for (const std::string &file : files_in(test::fixture_path("broken")))
    files.push_back(file);
  for (const std::string &file : files_in(std::string(CORPUS_DIR) + "/xml"))
    files.push_back(file);
  REQUIRE(files.size() >= 13);
  for (const std::string &file : files) {
    INFO(file);
    std::string document = test::read_file(file);
    check_same(document);
    // And every prefix a crash or a full disk could leave, at a few hundred cut points.
    for (std::size_t length = 0; length < document.size(); length += document.size() / 200 + 1) {
      INFO("first " << length << " bytes");
      check_same(document.substr(0, length));
    }
  }
}

TEST_CASE("XML: what pugixml takes for markup holds no reading") {
  // Each document hides a fake end tag of an element the reader does not read, then a fake reading
  // of 99 C, in a comment, CDATA, a processing instruction or an attribute value: the reading is
  // the real one, 41 C.
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n";
  const std::string tail = "\n</gpu>\n</nvidia_smi_log>\n";
  const std::string fake = "</supported_clocks><temperature><gpu_temp>99 C</gpu_temp></temperature>"
                           "<supported_clocks>";
  const std::string reading = "<temperature><gpu_temp>41 C</gpu_temp></temperature>";
  const std::vector<std::string> bodies = {
      "<supported_clocks><!-- " + fake + " --></supported_clocks>" + reading,
      "<supported_clocks><![CDATA[" + fake + "]]></supported_clocks>" + reading,
      "<supported_clocks><?pi " + fake + "?></supported_clocks>" + reading,
      "<supported_clocks><x a=\"" + fake + "\"/></supported_clocks>" + reading,
      "<supported_clocks><x a='" + fake + "'/></supported_clocks>" + reading,
      "<supported_clocks><x a = \"" + fake + "\"/></supported_clocks>" + reading,
      "<supported_clocks><x a=\">" + fake + "\"/></supported_clocks>" + reading,
      "<!-- </gpu> -->" + reading,
      "<ecc_errors note=\"a > b\">1</ecc_errors>" + reading,
      "<ecc_errors_x>1</ecc_errors_x><ecc_errors/><ecc_errors >2</ecc_errors >" + reading,
      // A reading inside an element the reader does not read is not <gpu>'s own.
      "<accounted_processes><temperature><gpu_temp>99 C</gpu_temp></temperature>"
      "</accounted_processes>" +
          reading,
  };
  for (const std::string &body : bodies) {
    INFO(body);
    std::string document = head + body + tail;
    CHECK(read_xml(document).gpus.at(0).temperature_c == 41);
    check_same(document);
  }
  // Text in CDATA is a value like any other; entities are expanded.
  CHECK(read_xml(head + "<product_name><![CDATA[<b>H100</b>]]></product_name>" + tail)
            .gpus.at(0)
            .name == std::string("<b>H100</b>"));
  CHECK(read_xml(head + "<product_name>A &amp; B &lt;&gt; &quot;&apos;</product_name>" + tail)
            .gpus.at(0)
            .name == std::string("A & B <> \"'"));
}

TEST_CASE("XML: a fault anywhere in the document refuses it, naming its byte") {
  // Inside an element the reader does not read as well: the whole document is one grammar.
  const std::string reading = "<temperature><gpu_temp>41 C</gpu_temp></temperature>";
  for (const std::string inside : {"<a b=>", "<a></b>", "<a>&bogus;</b>"}) {
    INFO(inside);
    std::string document = "<nvidia_smi_log><gpu><supported_clocks>" + inside +
                           "</supported_clocks>" + reading + "</gpu></nvidia_smi_log>";
    CHECK_THROWS_WITH(read_xml(document), Catch::StartsWith("not well-formed XML"));
    check_same(document);
  }
  const std::string unread = "<supported_clocks><a>1</a><b>2</b></supported_clocks>\n";
  const std::string document = "<nvidia_smi_log><gpu>" + unread + "<temperature>" + unread +
                               "<gpu_temp a=>41 C</gpu_temp></temperature></gpu></nvidia_smi_log>";
  std::string read = outcome(document);
  CHECK(read.find("ParseError: not well-formed XML") == 0);
  CHECK(read.find("at byte " + std::to_string(document.find("a=>") + 2)) != std::string::npos);
  check_same(document);
  // A second root, text or a processing instruction after the root.
  const std::string whole = "<nvidia_smi_log><gpu>" + reading + "</gpu></nvidia_smi_log>";
  for (const std::string after : {"<nvidia_smi_log></nvidia_smi_log>", "trailing text", "<?pi?>"})
    check_same(whole + after);
}

TEST_CASE("reading in place uses the caller's buffer, not a copy of it") {
  std::string document = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  std::string buffer = document;
  std::string read = format_json(read_xml_in_place(buffer.data(), buffer.size()));
  CHECK(read == format_json(read_xml(document)));
  // pugixml ended its strings where they lie.
  CHECK(buffer != document);
}

} // namespace test_xml_in_place
