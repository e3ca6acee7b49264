#include "tests/testing.h"

namespace td = tandem;
using td::testing::check_error;

TEST_CASE("devices parse from strings and print with their index", "[cpu]") {
  CHECK(td::Device("cpu") == td::Device(td::kCPU, 0));
  CHECK(td::Device("cpu:1") == td::Device(td::kCPU, 1));
  CHECK(td::Device("cuda") == td::Device(td::kCUDA, 0));
  CHECK(td::Device("cuda:3").index() == 3);
  CHECK(td::Device("cuda:3").is_cuda());
  CHECK(td::Device("cpu:2").str() == "cpu:2");
  CHECK(td::Device(td::kCUDA, 1).str() == "cuda:1");
  std::ostringstream out;
  out << td::Device("cpu:7");
  CHECK(out.str() == "cpu:7");
}

TEST_CASE("devices compare by type, then index", "[cpu]") {
  CHECK(td::Device("cpu:0") != td::Device("cpu:1"));
  CHECK(td::Device("cpu:0") != td::Device("cuda:0"));
  CHECK(td::Device("cpu:0") < td::Device("cpu:1"));
  CHECK(td::Device("cpu:5") < td::Device("cuda:0"));
}

TEST_CASE("malformed device strings are rejected with the string in the message", "[cpu]") {
  check_error([] { td::Device("gpu:0"); }, {"unknown device type", "gpu:0"});
  check_error([] { td::Device("cuda:"); }, {"no index", "cuda:"});
  check_error([] { td::Device("cuda:-1"); }, {"bad index", "cuda:-1"});
  check_error([] { td::Device("cuda:1x"); }, {"bad index", "cuda:1x"});
  check_error([] { td::Device("cpu:99999"); }, {"bad index"});
  check_error([] { td::Device(td::kCPU, -1); }, {"out of range"});
}

TEST_CASE("TANDEM_VISIBLE_DEVICES maps logical CUDA devices to GPUs, repeats allowed", "[cpu]") {
  CHECK(td::parse_visible_devices("0,1", 2) == std::vector<int>{0, 1});
  CHECK(td::parse_visible_devices("1,0", 2) == std::vector<int>{1, 0});
  CHECK(td::parse_visible_devices(" 0, 0 ,0", 1) == std::vector<int>{0, 0, 0});
  CHECK(td::parse_visible_devices("", 4).empty());
  td::testing::check_error([] { td::parse_visible_devices("0,2", 2); }, {"TANDEM_VISIBLE_DEVICES='0,2'", "'2'", "0 to 1"});
  td::testing::check_error([] { td::parse_visible_devices("0,,1", 2); }, {"entry ''"});
  td::testing::check_error([] { td::parse_visible_devices("x", 2); }, {"entry 'x'"});
  td::testing::check_error([] { td::parse_visible_devices("-1", 2); }, {"entry '-1'"});
}
