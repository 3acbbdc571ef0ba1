// Runs a fuzz target over files without libFuzzer: each argument is a file or a directory of files
// (the corpus), each file one call of LLVMFuzzerTestOneInput. The main build's smoke test of the targets.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> paths;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) {
          paths.push_back(entry.path());
        }
      }
    } else {
      paths.push_back(arg);
    }
    for (const auto& p : paths) {
      run_file(p);
      ++files;
    }
  }
  if (files == 0) {
    std::fprintf(stderr, "no input files (an empty corpus tests nothing)\n");
    return 1;
  }
  std::printf("%zu inputs ran\n", files);
  return 0;
}
