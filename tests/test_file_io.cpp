#include "core/descriptor.hpp"
#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace test_file_io {

using namespace nvsmi;

namespace {

std::vector<std::string> folder_entries(const std::string &folder) {
  std::vector<std::string> names;
  DIR *dir = opendir(folder.c_str());
  while (dirent *entry = readdir(dir))
    if (entry->d_name[0] != '.')
      names.emplace_back(entry->d_name);
  closedir(dir);
  return names;
}

} // namespace

TEST_CASE("replace_file_atomically writes the whole content and leaves no temporary") {
  std::string folder = test::temporary_folder();
  std::string path = folder + "/gpus.json";
  replace_file_atomically(path, "first\n");
  replace_file_atomically(path, "second\n");
  CHECK(test::read_file(path) == "second\n");
  CHECK(folder_entries(folder) == std::vector<std::string>{"gpus.json"});
  struct stat info {};
  REQUIRE(stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0044) != 0); // readable by the UI, not mkstemp's 0600
}

TEST_CASE("a failed replace leaves the old file as it was") {
  std::string folder = test::temporary_folder();
  std::string path = folder + "/gpus.json";
  test::write_file(path, "old\n");
  chmod(folder.c_str(), 0500);                            // no new files in the folder
  bool root = access((folder + "/.").c_str(), W_OK) == 0; // root ignores the mode
  if (!root) {
    try {
      replace_file_atomically(path, "new\n");
      FAIL("no error");
    } catch (const AgentError &error) {
      CHECK(error.code() == exit_io);
      CHECK_THAT(error.what(), Catch::Contains(path));
    }
    CHECK(test::read_file(path) == "old\n");
  }
  chmod(folder.c_str(), 0700);
  // A target that is a folder cannot be replaced, even by root: the rename fails.
  std::string target = folder + "/a-folder";
  mkdir(target.c_str(), 0700);
  test::write_file(target + "/keep", "x");
  CHECK_THROWS_AS(replace_file_atomically(target, "new\n"), AgentError);
  CHECK(test::read_file(target + "/keep") == "x");
  CHECK(folder_entries(folder).size() == 2); // gpus.json and a-folder: no temporary left
}

TEST_CASE("read_capped reads what has no size, a pipe, into a buffer grown as it comes") {
  // A file's size gives its buffer; a pipe's 200,000 bytes arrive in reads of at most 64 KiB,
  // each into the buffer, grown where full.
  std::string folder = test::temporary_folder();
  std::string fifo = folder + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string content(200000, 'x');
  for (std::size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<char>('a' + i % 26);
  std::thread writer([&] {
    Descriptor fd(::open(fifo.c_str(), O_WRONLY | O_CLOEXEC));
    write_all(fd.get(), content);
  });
  FileBytes bytes = read_capped(fifo, content.size());
  writer.join();
  CHECK(bytes.view() == content);
  test::write_file(folder + "/file", content);
  CHECK(read_capped(folder + "/file", content.size()).view() == content);
}

TEST_CASE("read_capped reads files and refuses what is too large or missing") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/small", "12345");
  CHECK(read_capped(folder + "/small", 5).view() == "12345");
  try {
    read_capped(folder + "/small", 4);
    FAIL("no error");
  } catch (const AgentError &error) {
    CHECK(error.code() == exit_bad_output);
  }
  try {
    read_capped(folder + "/missing", 100);
    FAIL("no error");
  } catch (const AgentError &error) {
    CHECK(error.code() == exit_io);
    CHECK_THAT(error.what(), Catch::Contains("missing"));
  }
}

// read_up_to grows its room as the bytes come: a cap far above what a file holds (the host's I/O
// rates read /proc/diskstats with 1 MiB) no longer takes, and zero-fills, the whole cap on every
// call; what it reads is the same.
TEST_CASE("read_up_to: a small file under a large cap takes no more room than it needs") {
  std::string folder = test::temporary_folder();
  std::string small = folder + "/diskstats", large = folder + "/large";
  test::write_file(small, "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n");
  std::string content;
  for (int i = 0; content.size() < 300 * 1024; ++i)
    content += "line " + std::to_string(i) + "\n";
  test::write_file(large, content);
  const std::size_t cap = (1u << 20) + 1;

  Descriptor fd(::open(small.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  REQUIRE(read_up_to(fd.get(), cap, std::nullopt, out));
  CHECK(out == test::read_file(small));
  // Not even the 64 KiB a call may read: room made in `out` before the read is zero-filled, and
  // that was most of a host reading's work (docs/PERFORMANCE.md, "A sample's host reading").
  CHECK(out.capacity() < 4096);

  // Past the first room: the whole file, appended to what `out` held; from an offset; only up to
  // the count.
  Descriptor whole(::open(large.c_str(), O_RDONLY | O_CLOEXEC));
  std::string appended = "before:";
  REQUIRE(read_up_to(whole.get(), cap, std::nullopt, appended));
  CHECK(appended == "before:" + content);
  std::string from_offset;
  REQUIRE(read_up_to(whole.get(), cap, off_t{100 * 1024}, from_offset));
  CHECK(from_offset == content.substr(100 * 1024));
  std::string counted;
  REQUIRE(read_up_to(whole.get(), 150 * 1024 + 7, off_t{0}, counted));
  CHECK(counted == content.substr(0, 150 * 1024 + 7));
}

} // namespace test_file_io
