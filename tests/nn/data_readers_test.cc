// Tests of the MNIST and CIFAR-10 readers on small files the tests write themselves, plain and
// gzipped, well-formed and malformed.
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nn/data/cifar10.h"
#include "nn/data/mnist.h"
#include "tests/testing.h"

namespace td = tandem;
namespace data = tandem::data;
namespace fs = std::filesystem;
using td::testing::check_error;
using td::testing::values;
using Bytes = std::vector<uint8_t>;

namespace {

fs::path fresh_dir(const std::string& name) { return td::testing::scratch_dir("tandem_data_" + name); }

void write_file(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

Bytes read_back(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes `bytes` gzip-compressed, as the gzip tool would.
void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

void put_u32(Bytes& out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(v >> shift));
}

uint8_t mnist_pixel(int64_t i, int64_t p) { return static_cast<uint8_t>((i * 53 + p * 7) % 256); }

Bytes idx_images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28, uint32_t magic = 0x00000803) {
  Bytes out;
  put_u32(out, magic);
  put_u32(out, n);
  put_u32(out, rows);
  put_u32(out, cols);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < rows * cols; ++p) out.push_back(mnist_pixel(i, p));
  }
  return out;
}

Bytes idx_labels(const std::vector<uint8_t>& labels) {
  Bytes out;
  put_u32(out, 0x00000801);
  put_u32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void check_mnist_images(const td::Tensor& images, int64_t n) {
  REQUIRE(images.sizes() == td::Shape{n, 1, 28, 28});
  REQUIRE(images.dtype() == td::kFloat32);
  std::vector<double> got = values(images);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < 784; ++p) {
      double expected = static_cast<float>(mnist_pixel(i, p)) / 255.0f;
      if (got[i * 784 + p] != expected) FAIL("image " << i << " pixel " << p << ": " << got[i * 784 + p]);
    }
  }
  CHECK(*std::min_element(got.begin(), got.end()) >= 0.0);
  CHECK(*std::max_element(got.begin(), got.end()) <= 1.0);
}

uint8_t cifar_byte(int64_t batch, int64_t record, int64_t i) {
  return static_cast<uint8_t>((batch * 31 + record * 17 + i * 5) % 256);
}
uint8_t cifar_label(int64_t batch, int64_t record) { return static_cast<uint8_t>((batch * 3 + record) % 10); }

Bytes cifar_batch(int64_t batch, int64_t records) {
  Bytes out;
  for (int64_t r = 0; r < records; ++r) {
    out.push_back(cifar_label(batch, r));
    for (int64_t i = 0; i < 3072; ++i) out.push_back(cifar_byte(batch, r, i));
  }
  return out;
}

// Checks rows [first, first + records) of a CIFAR-10 result against batch `batch`'s bytes.
void check_cifar_rows(const data::Example& e, int64_t first, int64_t batch, int64_t records) {
  std::vector<double> images = values(e.data), labels = values(e.target);
  for (int64_t r = 0; r < records; ++r) {
    CHECK(labels[first + r] == cifar_label(batch, r));
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t y = 0; y < 32; ++y) {
        for (int64_t x = 0; x < 32; ++x) {
          double got = images[(((first + r) * 3 + c) * 32 + y) * 32 + x];
          double expected = static_cast<float>(cifar_byte(batch, r, c * 1024 + y * 32 + x)) / 255.0f;
          if (got != expected) FAIL("row " << first + r << " [" << c << ", " << y << ", " << x << "]: " << got);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("MNIST reads generated IDX files, plain or gzipped, into floats in [0, 1] and int64 labels", "[cpu]") {
  fs::path dir = fresh_dir("mnist_ok");
  write_file(dir / "train-images-idx3-ubyte", idx_images(3));
  write_file(dir / "train-labels-idx1-ubyte", idx_labels({3, 0, 9}));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(5));
  write_file(dir / "t10k-labels-idx1-ubyte", idx_labels({1, 2, 3, 4, 5}));

  data::MNIST train(dir.string());
  CHECK(train.size() == 3);
  CHECK(train.mode() == data::MNIST::Mode::kTrain);
  check_mnist_images(train.data(), 3);
  CHECK(train.targets().dtype() == td::kInt64);
  CHECK(values(train.targets()) == std::vector<double>{3, 0, 9});
  data::Example e = train.get(2);
  CHECK(e.data.sizes() == td::Shape{1, 28, 28});
  CHECK(e.target.item<int64_t>() == 9);

  data::MNIST test(dir.string(), data::MNIST::Mode::kTest);
  CHECK(test.size() == 5);
  check_mnist_images(test.data(), 5);
  CHECK(values(test.targets()) == std::vector<double>{1, 2, 3, 4, 5});

  // gzip is recognised by content: a gzipped file without the suffix, or a plain one with it, reads.
  write_gz(dir / "renamed", idx_labels({7, 7}));
  CHECK(values(data::read_mnist_labels((dir / "renamed").string())) == std::vector<double>{7, 7});
  write_file(dir / "plain.gz", idx_labels({8}));
  CHECK(values(data::read_mnist_labels((dir / "plain.gz").string())) == std::vector<double>{8});
  // Several gzip members one after another form one valid gzip file.
  write_gz(dir / "part1.gz", idx_images(2));
  Bytes joined = read_back(dir / "part1.gz");
  write_gz(dir / "part2.gz", Bytes{});
  Bytes empty_member = read_back(dir / "part2.gz");
  joined.insert(joined.end(), empty_member.begin(), empty_member.end());
  write_file(dir / "joined.gz", joined);
  check_mnist_images(data::read_mnist_images((dir / "joined.gz").string()), 2);
}

TEST_CASE("malformed MNIST files raise errors naming the file and the fault", "[cpu]") {
  fs::path dir = fresh_dir("mnist_bad");
  auto check_images = [&](const std::string& name, const Bytes& bytes, std::vector<std::string> fragments) {
    write_file(dir / name, bytes);
    fragments.push_back(name);
    check_error([&] { data::read_mnist_images((dir / name).string()); }, fragments);
  };
  check_images("labels_as_images", idx_labels({1, 2}), {"bad magic number", "0x00000801", "0x00000803"});
  check_images("not_idx", Bytes{'h', 'e', 'l', 'l', 'o', '!', '!', '!'}, {"bad magic number", "0x68656c6c"});
  check_images("tiny", Bytes{0, 0}, {"truncated", "2 bytes", "IDX header"});
  Bytes header = idx_images(0);
  check_images("short_header", Bytes(header.begin(), header.begin() + 10),
               {"truncated", "10 bytes", "16-byte IDX header"});
  check_images("wrong_dims", idx_images(2, 27, 28), {"images are 27x28", "expected 28x28"});
  Bytes three = idx_images(3);
  check_images("short_data", Bytes(three.begin(), three.end() - 100),
               {"truncated", "3 images", "2352 bytes", "2252 bytes"});
  Bytes long_data = idx_images(3);
  long_data.push_back(0);
  check_images("long_data", long_data, {"3 images", "2353 bytes", "1 too many"});

  write_file(dir / "bad_label", idx_labels({1, 10, 2}));
  check_error([&] { data::read_mnist_labels((dir / "bad_label").string()); },
              {"bad_label", "label 10", "index 1", "0..9"});
  write_file(dir / "images_as_labels", idx_images(1));
  check_error([&] { data::read_mnist_labels((dir / "images_as_labels").string()); },
              {"images_as_labels", "bad magic number", "0x00000803", "0x00000801"});

  // gzip faults: cut short, a corrupt checksum, a corrupt header, trailing garbage.
  write_gz(dir / "whole.gz", idx_images(4));
  Bytes gz = read_back(dir / "whole.gz");
  Bytes cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  check_images("cut.gz", cut, {"truncated gzip data"});
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  check_images("bad_crc.gz", bad_crc, {"corrupt gzip data", "incorrect data check"});
  Bytes bad_method = gz;
  bad_method[2] = 7;  // compression method 8 (deflate) is the only one
  check_images("bad_method.gz", bad_method, {"corrupt gzip data", "unknown compression method"});
  Bytes trailing = gz;
  trailing.insert(trailing.end(), {'x', 'y', 'z'});
  check_images("trailing.gz", trailing, {"3 bytes of trailing data"});
  Bytes scrambled = gz;
  for (size_t i = 20; i < scrambled.size() - 8; i += 7) scrambled[i] ^= 0xa5;
  check_images("scrambled.gz", scrambled, {"gzip data"});

  check_error([&] { data::read_mnist_images((dir / "absent").string()); }, {"absent", "cannot open"});
}

TEST_CASE("the MNIST dataset needs both files, agreeing in count", "[cpu]") {
  fs::path dir = fresh_dir("mnist_pair");
  check_error([&] { data::MNIST(dir.string()); }, {"MNIST", "neither", "train-images-idx3-ubyte", ".gz"});
  write_file(dir / "train-images-idx3-ubyte", idx_images(3));
  check_error([&] { data::MNIST(dir.string()); }, {"MNIST", "neither", "train-labels-idx1-ubyte"});
  write_file(dir / "train-labels-idx1-ubyte", idx_labels({1, 2}));
  check_error([&] { data::MNIST(dir.string()); }, {"MNIST", "3 images", "2 labels", "train-labels-idx1-ubyte"});
  check_error([&] { data::MNIST(dir.string(), data::MNIST::Mode::kTest); }, {"t10k-images-idx3-ubyte"});
}

TEST_CASE("CIFAR-10 reads generated batches, plain or gzipped, into [N, 3, 32, 32] floats and labels", "[cpu]") {
  fs::path dir = fresh_dir("cifar_ok");
  const std::vector<int64_t> records = {2, 1, 3, 1, 2};
  for (int64_t b = 0; b < 5; ++b) {
    fs::path path = dir / ("data_batch_" + std::to_string(b + 1) + ".bin");
    if (b % 2) {
      write_gz(path.string() + ".gz", cifar_batch(b, records[b]));
    } else {
      write_file(path, cifar_batch(b, records[b]));
    }
  }
  write_gz(dir / "test_batch.bin.gz", cifar_batch(9, 4));

  data::CIFAR10 train(dir.string());
  REQUIRE(train.size() == 9);
  CHECK(train.data().sizes() == td::Shape{9, 3, 32, 32});
  CHECK(train.data().dtype() == td::kFloat32);
  CHECK(train.targets().dtype() == td::kInt64);
  data::Example all{train.data(), train.targets()};
  int64_t first = 0;
  for (int64_t b = 0; b < 5; ++b) {
    INFO("data_batch_" << b + 1);
    check_cifar_rows(all, first, b, records[b]);
    first += records[b];
  }
  data::CIFAR10 test(dir.string(), data::CIFAR10::Mode::kTest);
  REQUIRE(test.size() == 4);
  check_cifar_rows({test.data(), test.targets()}, 0, 9, 4);
  CHECK(train.get(8).data.sizes() == td::Shape{3, 32, 32});

  // The folder the official archive unpacks to is found under the root given.
  fs::path root = fresh_dir("cifar_root");
  fs::create_directories(root / "cifar-10-batches-bin");
  write_file(root / "cifar-10-batches-bin" / "test_batch.bin", cifar_batch(4, 2));
  data::CIFAR10 nested(root.string(), data::CIFAR10::Mode::kTest);
  check_cifar_rows({nested.data(), nested.targets()}, 0, 4, 2);

  data::Example one = data::read_cifar10_batch((dir / "data_batch_1.bin").string());
  check_cifar_rows(one, 0, 0, 2);
  CHECK(data::CIFAR10::class_names()[3] == "cat");
}

TEST_CASE("malformed CIFAR-10 batches raise errors naming the file and the fault", "[cpu]") {
  fs::path dir = fresh_dir("cifar_bad");
  auto check_batch = [&](const std::string& name, const Bytes& bytes, std::vector<std::string> fragments) {
    write_file(dir / name, bytes);
    fragments.push_back(name);
    check_error([&] { data::read_cifar10_batch((dir / name).string()); }, fragments);
  };
  Bytes three = cifar_batch(0, 3);
  check_batch("short.bin", Bytes(three.begin(), three.end() - 1000),
              {"truncated", "8219 bytes", "3073-byte records", "2 records", "2073 bytes over"});
  Bytes bad_label = cifar_batch(0, 3);
  bad_label[3073] = 10;
  check_batch("label.bin", bad_label, {"record 1", "label 10", "0..9"});
  check_batch("empty.bin", Bytes{}, {"empty"});
  // A directory opens as a file and reports a size of 2^63 - 1: refused before any allocation.
  fs::create_directories(dir / "a_directory.bin");
  check_error([&] { data::read_cifar10_batch((dir / "a_directory.bin").string()); },
              {"a_directory.bin", "not a regular file"});
  check_error([&] { data::read_mnist_images((dir / "a_directory.bin").string()); },
              {"a_directory.bin", "not a regular file"});
  write_gz(dir / "whole.gz", cifar_batch(0, 2));
  Bytes gz = read_back(dir / "whole.gz");
  check_batch("cut.bin.gz", Bytes(gz.begin(), gz.end() - 20), {"truncated gzip data"});

  for (int b = 1; b <= 5; ++b) {
    if (b != 4) write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), cifar_batch(b, 1));
  }
  check_error([&] { data::CIFAR10(dir.string()); }, {"CIFAR10", "neither", "data_batch_4.bin", ".gz"});
  check_error([&] { data::CIFAR10(dir.string(), data::CIFAR10::Mode::kTest); }, {"test_batch.bin"});
}
