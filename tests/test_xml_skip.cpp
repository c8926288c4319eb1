// read_xml drops the <gpu> children it does not read before parsing (XmlParse::skip_unread). It
// must read exactly what the full DOM parse reads, on every recording, and read_xml_in_place (the
// stream's way, in the caller's buffer) exactly what read_xml reads.
#include "formats/formats.hpp"
#include "support.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

namespace test_xml_skip {

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

std::string outcome(const std::string &document, XmlParse mode) {
  return outcome_of([&] { return read_xml(document, mode); });
}

std::string outcome_in_place(std::string document, XmlParse mode) {
  return outcome_of([&] { return read_xml_in_place(document.data(), document.size(), mode); });
}

void check_same(const std::string &document) {
  std::string skipped = outcome(document, XmlParse::skip_unread);
  CHECK(skipped == outcome(document, XmlParse::full));
  CHECK(skipped == outcome_in_place(document, XmlParse::skip_unread));
  CHECK(skipped == outcome_in_place(document, XmlParse::full));
}

std::vector<std::string> files_in(const std::string &folder) {
  std::vector<std::string> files;
  if (std::filesystem::is_directory(folder))
    for (const auto &entry : std::filesystem::directory_iterator(folder))
      files.push_back(entry.path());
  return files;
}

} // namespace

TEST_CASE("skipping unread elements reads the same as the full parse: fixtures and corpus") {
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

TEST_CASE("skipping unread elements: what it leaves to the full parser") {
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n";
  const std::string tail = "\n</gpu>\n</nvidia_smi_log>\n";
  const std::string reading = "<temperature><gpu_temp>41 C</gpu_temp></temperature>";
  const std::vector<std::string> bodies = {
      // An unread element that holds an element of its own name.
      "<ecc_errors><ecc_errors>1</ecc_errors></ecc_errors>" + reading,
      // Comments and CDATA, in and out of unread elements, holding what looks like tags.
      "<!-- </gpu> -->" + reading,
      "<ecc_errors><!-- </ecc_errors> --></ecc_errors>" + reading,
      "<ecc_errors><![CDATA[</ecc_errors>]]></ecc_errors>" + reading,
      "<product_name><![CDATA[<b>H100</b>]]></product_name>" + reading,
      // Attributes holding '>' and '<'.
      "<ecc_errors note=\"a > b\">1</ecc_errors>" + reading,
      "<ecc_errors note=\"a < b\">1</ecc_errors>" + reading,
      // ... and, inside an unread element, its end tag and a read element that does not parse:
      // it is all the attribute's value, which pugixml takes, so that nothing of it may be kept.
      "<supported_clocks><x a=\"</supported_clocks><temperature b=><gpu_temp>9 C</gpu_temp>"
      "</temperature><supported_clocks>\"/></supported_clocks>" +
          reading,
      "<supported_clocks><x a='</supported_clocks>'/></supported_clocks>" + reading,
      // Names that begin like an unread one, self-closing and spaced tags.
      "<ecc_errors_x>1</ecc_errors_x><ecc_errors/><ecc_errors >2</ecc_errors >" + reading,
      // Unclosed and mismatched tags.
      "<ecc_errors>" + reading,
      "<temperature><gpu_temp>41 C</temperature></gpu_temp>",
  };
  for (const std::string &body : bodies) {
    INFO(body);
    check_same(head + body + tail);
  }
  // Entities are expanded the same in what is kept.
  check_same(head + "<product_name>A &amp; B</product_name>" + tail);
  // A second root, text or a processing instruction after the root.
  check_same(head + tail + "<nvidia_smi_log></nvidia_smi_log>");
  check_same(head + tail + "trailing text");
  check_same(head + tail + "<?pi?>");
}

TEST_CASE("skipping unread elements does not look inside them") {
  // Their only fault inside an unread element: the full parse refuses, the default reads on.
  std::string document = "<nvidia_smi_log><gpu><supported_clocks><a>&bogus;</a></supported_clocks>"
                         "<temperature><gpu_temp>41 C</gpu_temp></temperature></gpu>"
                         "</nvidia_smi_log>";
  CHECK(read_xml(document).gpus.at(0).temperature_c == 41);
  CHECK(read_xml(document, XmlParse::full).gpus.at(0).temperature_c == 41); // pugixml keeps it
  std::string bad_tag = "<nvidia_smi_log><gpu><supported_clocks><a b=></supported_clocks>"
                        "<temperature><gpu_temp>41 C</gpu_temp></temperature></gpu>"
                        "</nvidia_smi_log>";
  CHECK(read_xml(bad_tag).gpus.at(0).temperature_c == 41);
  CHECK_THROWS_AS(read_xml(bad_tag, XmlParse::full), ParseError);
  std::string mismatched = "<nvidia_smi_log><gpu><supported_clocks><a></b></supported_clocks>"
                           "<temperature><gpu_temp>41 C</gpu_temp></temperature></gpu>"
                           "</nvidia_smi_log>";
  CHECK(read_xml(mismatched).gpus.at(0).temperature_c == 41);
  CHECK_THROWS_AS(read_xml(mismatched, XmlParse::full), ParseError);
}

TEST_CASE("skipping unread elements: an error in what is kept names its byte in the document") {
  // pugixml parses what is kept, moved together; the byte it names is counted in the document as
  // given, as the full parse counts it, past every unread element dropped before it.
  const std::string unread = "<supported_clocks><a>1</a><b>2</b></supported_clocks>\n"
                             "<ecc_errors><volatile/></ecc_errors> <accounted_processes/>\n";
  const std::string document = "<nvidia_smi_log><gpu>" + unread + "<temperature>" + unread +
                               "<gpu_temp a=>41 C</gpu_temp></temperature>" + unread +
                               "</gpu></nvidia_smi_log>";
  std::string skipped = outcome(document, XmlParse::skip_unread);
  CHECK(skipped.find("ParseError: not well-formed XML") == 0);
  CHECK(skipped.find("at byte " + std::to_string(document.find("a=>") + 2)) != std::string::npos);
  check_same(document);
}

TEST_CASE("skipping unread elements: runs of neighbours, and what is read among them") {
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n";
  const std::string tail = "\n</gpu>\n</nvidia_smi_log>\n";
  // Unread neighbours with space, text and a read element between them; a read element inside
  // an unread one is not read (it is not <gpu>'s child), a read one after it is.
  const std::string body = "<supported_clocks/>\n  <ecc_errors_x>1</ecc_errors_x>\t"
                           "<accounted_processes><temperature><gpu_temp>99 C</gpu_temp>"
                           "</temperature></accounted_processes>\n"
                           "<temperature><gpu_temp>41 C</gpu_temp></temperature>\n"
                           "<voltage/>text<clocks_event_reasons_x/> <fan_speed>30 %</fan_speed>";
  const std::string document = head + body + tail;
  Snapshot snapshot = read_xml(document);
  REQUIRE(snapshot.gpus.size() == 1);
  CHECK(snapshot.gpus[0].temperature_c == 41);
  CHECK(snapshot.gpus[0].fan_speed_percent == 30);
  check_same(document);
  // Nested deeper outside <gpu> than the scan follows: left to the full parse, read the same.
  std::string deep = "<nvidia_smi_log>";
  for (int level = 0; level < 40; ++level)
    deep += "<x>";
  for (int level = 0; level < 40; ++level)
    deep += "</x>";
  deep += "<gpu><supported_clocks/><temperature><gpu_temp>41 C</gpu_temp></temperature></gpu>"
          "</nvidia_smi_log>";
  CHECK(read_xml(deep).gpus.at(0).temperature_c == 41);
  check_same(deep);
}

TEST_CASE("reading in place uses the caller's buffer, not a copy of it") {
  std::string document = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  std::string buffer = document;
  std::string read = format_json(read_xml_in_place(buffer.data(), buffer.size()));
  CHECK(read == format_json(read_xml(document)));
  // The kept elements were moved down over the unread ones, where pugixml then parsed them.
  std::size_t unread = document.find("<supported_clocks>");
  REQUIRE(unread != std::string::npos);
  CHECK(buffer.compare(unread, 18, "<supported_clocks>") != 0);
}

TEST_CASE("skipping unread elements by their name: what could hide an end tag") {
  // An element's end is found by looking only where a tag of its name can start, where no comment,
  // CDATA, processing instruction or attribute in the document could hold a '<' that is not a tag.
  // Each document here hides a fake end tag of an unread element, then a fake reading of 99 C,
  // inside that element: a cut at the fake end would read 99 C where the element's reading is 41 C.
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
      // An attribute with space around its '=', and one holding a '>' before the fake end.
      "<supported_clocks><x a = \"" + fake + "\"/></supported_clocks>" + reading,
      "<supported_clocks><x a=\">" + fake + "\"/></supported_clocks>" + reading,
  };
  for (const std::string &body : bodies) {
    INFO(body);
    std::string document = head + body + tail;
    CHECK(outcome(document, XmlParse::full).find("ParseError") == std::string::npos);
    CHECK(read_xml(document).gpus.at(0).temperature_c == 41);
    check_same(document);
  }
}

TEST_CASE("skipping unread elements by their name: the name where it is not a tag") {
  // The name in text, at the element's first byte, inside longer names and at a '!' or '?'
  // elsewhere in the document (which sends the whole document tag by tag): each read as the full
  // parse reads it.
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n";
  const std::string tail = "\n</gpu>\n</nvidia_smi_log>\n";
  const std::string reading = "<temperature><gpu_temp>41 C</gpu_temp></temperature>";
  const std::vector<std::string> bodies = {
      "<ecc_errors>ecc_errors</ecc_errors>" + reading,
      "<supported_clocks><a>/supported_clocks</a><b>supported_clocks></b></supported_clocks>" +
          reading,
      "<ecc_errors><ecc_errors_x>1</ecc_errors_x><x_ecc_errors/></ecc_errors>" + reading,
      "<supported_clocks><a>x = 1</a></supported_clocks>" + reading,
      "<clocks><max_clocks/><clocks_x/></clocks><max_clocks><clocks></clocks></max_clocks>" +
          reading,
      "<product_name>H100!?</product_name><supported_clocks><a/></supported_clocks>" + reading,
      // An end tag that does not close, and one of its own name inside.
      "<supported_clocks></supported_clocks x>" + reading,
      "<supported_clocks><supported_clocks/></supported_clocks>" + reading,
      "<supported_clocks>" + reading,
  };
  for (const std::string &body : bodies) {
    INFO(body);
    check_same(head + body + tail);
  }
}

TEST_CASE("skipping unread elements by their name: the end at every place of a 64-byte step") {
  // The scan tests 64 places at a time for the name's first and last bytes (fewer near the
  // document's end) and then whether "<" or "</" comes before it. The end tag, and decoys that
  // pass the first test but not the second (the name in text, after a '/' alone, inside a longer
  // name, the first and last bytes a name's length apart), at every offset from the element's
  // start and near the document's end.
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n";
  const std::string reading = "<temperature><gpu_temp>41 C</gpu_temp></temperature>";
  const std::string decoys = "<a>supported_clocks> a/supported_clocks> sxxxxxxxxxxxxxxs</a>"
                             "<supported_clocks_x/><x_supported_clocks/>";
  for (std::size_t padding = 0; padding < 140; ++padding) {
    std::string text(padding, 's');
    for (const std::string &body :
         {"<supported_clocks>" + text + decoys + "</supported_clocks>" + reading,
          "<supported_clocks>" + decoys + "<b>" + text + "</b></supported_clocks>" + reading,
          reading + "<supported_clocks>" + text + "</supported_clocks>"}) {
      INFO(body);
      std::string document = head + body + "\n</gpu>\n</nvidia_smi_log>\n";
      CHECK(read_xml(document).gpus.at(0).temperature_c == 41);
      check_same(document);
    }
  }
}

} // namespace test_xml_skip
