// Tests of the `kps` command line, driven in-process through RunCli.
#include "tools/kps/cli.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/device.h"
#include "registry/tensor.h"
#include "tools/kps/bench.h"
#include "tools/kps/npy.h"
#include "tests/support/test_support.h"

namespace kps {
namespace cli {
namespace {

using ::kps::testing::Contains;

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult Kps(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("kps_cli_") + info->name() + "_" + std::to_string(std::random_device()()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

std::string FreshSeed() { return std::to_string(std::random_device()()); }

TEST_F(CliTest, NoArgumentsPrintsUsage) {
  CliResult r = Kps({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.out, "usage: kps"));
}

TEST_F(CliTest, HelpPrintsUsage) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"help"}, {"--help"}, {"run", "add", "--help"}}) {
    CliResult r = Kps(args);
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_TRUE(Contains(r.out, "usage: kps"));
    EXPECT_TRUE(Contains(r.out, "--attr NAME=VALUE"));
  }
}

TEST_F(CliTest, UnknownCommandSuggests) {
  CliResult r = Kps({"lst"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.err, "unknown command 'lst'; did you mean 'list'?"));
}

TEST_F(CliTest, ListContainsAddMulCopy) {
  CliResult r = Kps({"list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* op : {"add", "mul", "copy"}) {
    EXPECT_TRUE(Contains(r.out, std::string("\n") + op + " ") || r.out.rfind(std::string(op) + " ", 0) == 0)
        << op << " missing from:\n" << r.out;
  }
  EXPECT_TRUE(Contains(r.out, "cpu:float32"));
  EXPECT_TRUE(Contains(r.out, " ops\n"));
}

TEST_F(CliTest, DescribeAddShowsAlphaAndKernels) {
  CliResult r = Kps({"describe", "add"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "alpha (float, default 1)"));
  EXPECT_TRUE(Contains(r.out, "registered kernels (device:dtype): "));
  EXPECT_TRUE(Contains(r.out, "cpu:float32"));
}

TEST_F(CliTest, DescribeUnknownOpSuggests) {
  CliResult r = Kps({"describe", "ad"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.err, "unknown op 'ad'"));
  EXPECT_TRUE(Contains(r.err, "'add'"));
}

TEST_F(CliTest, DescribeNeedsOneOp) {
  EXPECT_EQ(Kps({"describe"}).code, kExitUsage);
  EXPECT_EQ(Kps({"describe", "add", "mul"}).code, kExitUsage);
}

TEST_F(CliTest, RunAddOnCpuWithCheckPasses) {
  CliResult r = Kps({"run", "add", "--device", "cpu", "--shape", "3,17", "--check", "--seed", FreshSeed()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "output out: float32[3, 17] on cpu"));
  EXPECT_TRUE(Contains(r.out, "PASS"));
  EXPECT_TRUE(Contains(r.out, "time: "));
}

TEST_F(CliTest, RunEveryAddDtypeOnCpuWithCheck) {
  for (const char* dtype : {"f16", "bf16", "f32", "f64", "i32", "i64"}) {
    SCOPED_TRACE(dtype);
    CliResult r = Kps({"run", "add", "--device=cpu", "--dtype", dtype, "--shape=129", "--attr", "alpha=3",
                       "--check", "--seed", FreshSeed()});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_TRUE(Contains(r.out, "PASS"));
  }
}

// Ops without inputs take their shape and dtype from attributes, and run on the device
// asked for (on a GPU machine, --device cuda must not fall back to the CPU).
TEST_F(CliTest, RunOpsWithoutInputs) {
  for (const std::string dev : {"cpu", "cuda"}) {
    if (dev == "cuda" && !CudaAvailable()) continue;
    CliResult r = Kps({"run", "fill", "--device", dev, "--attr", "shape=2,3", "--attr", "value=1.5", "--attr",
                       "dtype=f16"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_TRUE(Contains(r.out, "output out: float16[2, 3] on " + dev));
    r = Kps({"run", "uniform", "--device", dev, "--attr", "shape=1000", "--attr", "seed=7"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_TRUE(Contains(r.out, "output out: float32[1000] on " + dev));
  }
}

// Predicate inputs are random bools whatever --dtype; ops whose output size depends on
// the values (masked_select, nonzero) run and check like any other.
TEST_F(CliTest, RunPredicateAndDynamicOutputOps) {
  CliResult r = Kps({"run", "where", "--device", "cpu", "--shape", "5,7", "--check", "--seed", FreshSeed()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "input cond: bool[5, 7] random"));
  r = Kps({"run", "masked_select", "--device", "cpu", "--shape", "5,7", "--check", "--seed", FreshSeed()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "input mask: bool[5, 7] random"));
  EXPECT_TRUE(Contains(r.out, "PASS"));
  r = Kps({"run", "nonzero", "--device", "cpu", "--shape", "4,6", "--dtype", "bool", "--check", "--seed", FreshSeed()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "output indices: int64["));
  EXPECT_TRUE(Contains(r.out, "PASS"));
}

TEST_F(CliTest, RunMisspelledAttributeNamesTheRightOne) {
  CliResult r = Kps({"run", "add", "--device", "cpu", "--attr", "alpah=2"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.err, "no attribute 'alpah'"));
  EXPECT_TRUE(Contains(r.err, "'alpha'"));
}

TEST_F(CliTest, RunBadAttributeValueNamesOpAndAttribute) {
  CliResult r = Kps({"run", "add", "--device", "cpu", "--attr", "alpha=two"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.err, "op 'add': attribute 'alpha'"));
  EXPECT_TRUE(Contains(r.err, "'two'"));
}

TEST_F(CliTest, RunFromNpyInputsWritesNpyOutputs) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> x(6 * 7), y(6 * 7);
  for (float& v : x) v = uniform(rng);
  for (float& v : y) v = uniform(rng);
  ASSERT_TRUE(WriteNpy(Path("x.npy"), *Tensor::FromVector(x, Shape{6, 7})).ok());
  ASSERT_TRUE(WriteNpy(Path("y.npy"), *Tensor::FromVector(y, Shape{6, 7})).ok());

  const std::string out_dir = Path("out");
  CliResult r = Kps({"run", "add", "--device", "cpu", "--input", "x=" + Path("x.npy"), "--input",
                     "y=" + Path("y.npy"), "--attr", "alpha=2", "--out", out_dir});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "from " + Path("x.npy")));
  EXPECT_TRUE(Contains(r.out, "wrote "));

  absl::StatusOr<Tensor> out = ReadNpy(out_dir + "/out.npy");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->dtype(), DataType::kFloat32);
  ASSERT_EQ(out->shape(), (Shape{6, 7}));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = x[i] + 2.0f * y[i];
    EXPECT_NEAR(out->data<float>()[i], want, 1e-6f * (1.0f + std::fabs(want))) << "element " << i;
  }
}

TEST_F(CliTest, RunReportsMismatchedInputsFromTheOp) {
  std::vector<float> x = {1.5f, -2.25f, 3.0f};
  ASSERT_TRUE(WriteNpy(Path("x.npy"), *Tensor::FromVector(x, Shape{3})).ok());
  // y is random of the default shape [1024]: add's inference must reject it.
  CliResult r = Kps({"run", "add", "--device", "cpu", "--input", "x=" + Path("x.npy")});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_TRUE(Contains(r.err, "do not broadcast")) << r.err;
}

TEST_F(CliTest, RunUnknownInputNameIsReported) {
  std::vector<float> z = {0.5f, 1.25f};
  ASSERT_TRUE(WriteNpy(Path("z.npy"), *Tensor::FromVector(z, Shape{2})).ok());
  CliResult r = Kps({"run", "add", "--device", "cpu", "--input", "z=" + Path("z.npy")});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Contains(r.err, "has no input 'z'"));
}

TEST_F(CliTest, RunMissingNpyFileIsReported) {
  CliResult r = Kps({"run", "add", "--device", "cpu", "--input", "x=" + Path("absent.npy")});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_TRUE(Contains(r.err, "absent.npy"));
}

TEST_F(CliTest, RunUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"run"}, "exactly one op name"},
      {{"run", "add", "--shap", "3"}, "did you mean '--shape'?"},
      {{"run", "add", "--shape", "2,a"}, "bad dimension 'a'"},
      {{"run", "add", "--shape", "-2"}, "bad dimension '-2'"},
      {{"run", "add", "--dtype", "float8"}, "unknown dtype 'float8'"},
      {{"run", "add", "--device", "tpu"}, "unknown device 'tpu'"},
      {{"run", "add", "--input", "x.npy"}, "expected NAME=FILE.npy"},
      {{"run", "add", "--attr", "alpha"}, "expected NAME=VALUE"},
      {{"run", "add", "--seed", "-1"}, "--seed"},
      {{"run", "add", "--shape"}, "--shape needs a value"},
      {{"run", "add", "--check=yes"}, "--check takes no value"},
      {{"run", "add", "--dtype", "f16", "--dtype", "f32"}, "more than once"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    CliResult r = Kps(c.args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_TRUE(Contains(r.err, c.message));
  }
}

// Every mistake in the command line exits 2 (usage) and names the argument; numbers must
// read fully as plain decimals.
TEST_F(CliTest, UsageMistakesExitTwoAndNameTheArgument) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> messages;
  };
  const Case cases[] = {
      {{"run", "ad"}, {"unknown op 'ad'", "'add'"}},
      {{"describe", "no_such_op"}, {"unknown op 'no_such_op'"}},
      {{"run", "add", "--attr", "alpha=abc"}, {"--attr: op 'add': attribute 'alpha'", "'abc'", "as float"}},
      {{"run", "add", "--attr", "alpha= 2"}, {"attribute 'alpha'", "' 2'"}},
      {{"run", "add", "--attr", "alpha=+2"}, {"attribute 'alpha'", "'+2'"}},
      {{"run", "add", "--attr", "alpha=0x10"}, {"attribute 'alpha'", "'0x10'"}},
      {{"run", "sum", "--attr", "dims=1,x"}, {"op 'sum': attribute 'dims'", "element 'x'"}},
      {{"run", "sum", "--attr", "dims=0,"}, {"attribute 'dims'", "element ''"}},
      {{"run", "sum", "--attr", "dims=99999999999999999999"}, {"attribute 'dims'", "'99999999999999999999'"}},
      {{"run", "cumsum", "--attr", "dim=1.5"}, {"op 'cumsum': attribute 'dim'", "'1.5'", "as int"}},
      {{"run", "cumsum", "--attr", "dim=+1"}, {"attribute 'dim'", "'+1'"}},
      {{"run", "cast", "--attr", "dtype=float128"}, {"op 'cast': attribute 'dtype'", "unknown dtype 'float128'"}},
      {{"run", "add", "--attr", "alpha=1", "--attr", "alpha=2"}, {"--attr: attribute 'alpha' is given twice"}},
      {{"run", "add", "--input", "q=x.npy"}, {"has no input 'q'"}},
      {{"run", "add", "--shape", "0x10"}, {"--shape: ", "'0x10'", "hexadecimal", "0,10"}},
      {{"run", "add", "--shape", "2,0x3"}, {"--shape: ", "hexadecimal"}},
      {{"run", "add", "--shape", "+2"}, {"--shape: bad dimension '+2'"}},
      {{"run", "add", "--shape", "010"}, {"--shape: bad dimension '010'"}},
      {{"run", "add", "--shape", "1e3"}, {"--shape: bad dimension '1e3'"}},
      {{"run", "add", "--shape", "2x-3"}, {"--shape: bad dimension '-3'"}},
      {{"run", "add", "--shape", "99999999999999999999"}, {"--shape: bad dimension '99999999999999999999'"}},
      {{"run", "add", "--shape", "1152921504606846977"}, {"--shape: shape '1152921504606846977'", "too large"}},
      {{"run", "add", "--shape", "0,1152921504606846977"}, {"--shape: ", "too large"}},
      {{"run", "add", "--seed", "+5"}, {"--seed '+5'"}},
      {{"run", "add", "--seed", " 5"}, {"--seed ' 5'"}},
      {{"run", "add", "--seed", "0x10"}, {"--seed '0x10'"}},
      {{"run", "add", "--seed", "18446744073709551616"}, {"--seed '18446744073709551616'"}},
      {{"bench", "--reps", "+3"}, {"--reps '+3'"}},
      {{"bench", "--reps", "3abc"}, {"--reps '3abc'"}},
      {{"bench", "--calls", "99999999999"}, {"--calls '99999999999'"}},
      {{"bench", "--warmup", "-1"}, {"--warmup '-1'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    CliResult r = Kps(c.args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    for (const std::string& m : c.messages) EXPECT_TRUE(Contains(r.err, m)) << "want '" << m << "' in: " << r.err;
  }
  // The largest seed and a negative int attribute still read.
  CliResult ok = Kps({"run", "cumsum", "--device", "cpu", "--shape", "3,4", "--attr", "dim=-1", "--seed",
                      "18446744073709551615"});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  ok = Kps({"run", "add", "--device", "cpu", "--shape", "[2, 3]", "--attr", "alpha=-1.5e-1"});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  ok = Kps({"run", "sum", "--device", "cpu", "--shape", "2x3x4", "--attr", "dims=0, -1"});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_TRUE(Contains(ok.out, "output out: float32[3]")) << ok.out;
}

// A failure of the command, not of its line: exit 1.
TEST_F(CliTest, BadInputFilesExitOne) {
  CliResult r = Kps({"run", "add", "--device", "cpu", "--input", "x=" + dir_.string()});
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "is a directory")) << r.err;
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  r = Kps({"run", "add", "--device", "cpu", "--input", "x=" + Path("fifo")});
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "is not a regular file (fifo)")) << r.err;
}

// --out with two outputs (sort: values, indices).
TEST_F(CliTest, RunOutReplacesSymlinksNotTheirTargets) {
  const std::string out_dir = Path("out");
  std::filesystem::create_directories(out_dir);
  {
    std::ofstream(Path("victim.txt")) << "keep me";
  }
  std::filesystem::create_symlink(Path("victim.txt"), out_dir + "/values.npy");
  CliResult r = Kps({"run", "sort", "--device", "cpu", "--shape", "5", "--out", out_dir});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::ifstream victim(Path("victim.txt"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim), {}), "keep me");
  EXPECT_FALSE(std::filesystem::is_symlink(out_dir + "/values.npy"));
  EXPECT_TRUE(ReadNpy(out_dir + "/values.npy").ok());
  EXPECT_TRUE(ReadNpy(out_dir + "/indices.npy").ok());
}

TEST_F(CliTest, RunOutWritesNothingWhenOneOutputFails) {
  const std::string out_dir = Path("out");
  std::filesystem::create_directories(out_dir + "/indices.npy");  // a directory in the way
  CliResult r = Kps({"run", "sort", "--device", "cpu", "--shape", "5", "--out", out_dir});
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "--out: cannot write npy file '" + out_dir + "/indices.npy': Is a directory")) << r.err;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(out_dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"indices.npy"});

  // A write that fails in a directory --out created removes that directory again.
  const std::string fresh = Path("fresh/sub");
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 64;  // smaller than any .npy header: every write fails (EFBIG)
  void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  r = Kps({"run", "sort", "--device", "cpu", "--shape", "5", "--out", fresh});
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "--out: writing npy file")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("fresh")));
}

// The no-GPU errors run the real binary with every GPU hidden (CUDA_VISIBLE_DEVICES
// empty), so they are checked on GPU machines too, not skipped there.
CliResult KpsWithoutGpu(const std::string& args) {
  const std::string cmd = std::string("CUDA_VISIBLE_DEVICES= ") + KPS_TOOL_PATH + " " + args + " 2>&1";
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    r.code = -1;
    return r;
  }
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) r.err.append(buf, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST_F(CliTest, RunOnCudaWithoutGpuIsAClearError) {
  CliResult r = KpsWithoutGpu("run add --device cuda");
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "--device cuda: no CUDA GPU is visible")) << r.err;
  // auto falls back to the CPU backend.
  CliResult ok = KpsWithoutGpu("run add --device auto --shape 5 --check");
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_TRUE(Contains(ok.err, "PASS")) << ok.err;
}

TEST_F(CliTest, BenchWithoutGpuIsAClearError) {
  CliResult r = KpsWithoutGpu("bench");
  EXPECT_EQ(r.code, kExitError) << r.err;
  EXPECT_TRUE(Contains(r.err, "no CUDA GPU is visible")) << r.err;
}

TEST_F(CliTest, RunOnCudaWithCheckPasses) {
  KPS_SKIP_WITHOUT_GPU();
  for (const char* dtype : {"f16", "bf16", "f32", "f64", "i32", "i64"}) {
    SCOPED_TRACE(dtype);
    CliResult r = Kps({"run", "add", "--device", "cuda", "--dtype", dtype, "--shape", "3,1001", "--attr",
                       "alpha=-2", "--check", "--seed", FreshSeed()});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_TRUE(Contains(r.out, "on cuda"));
    EXPECT_TRUE(Contains(r.out, "PASS"));
  }
}

TEST_F(CliTest, BenchOnGpuWritesJson) {
  KPS_SKIP_WITHOUT_GPU();
  const std::string json = Path("bench.json");
  CliResult r = Kps({"bench", "--filter", "_f32_", "--reps", "3", "--warmup", "1", "--calls", "200", "--json", json});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Contains(r.out, "add_f32_odd"));
  EXPECT_TRUE(Contains(r.out, "eager_add_f32_1"));
  std::ifstream f(json);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_TRUE(Contains(text, "\"device\": "));
  EXPECT_TRUE(Contains(text, "{\"name\": \"add_f32_odd\", \"ms\": "));
  EXPECT_TRUE(Contains(text, "\"GBps\": "));
  EXPECT_TRUE(Contains(text, "{\"name\": \"eager_add_f32_1\", \"us\": "));
}

TEST_F(CliTest, BenchUsageErrors) {
  EXPECT_EQ(Kps({"bench", "--reps", "0"}).code, kExitUsage);
  EXPECT_EQ(Kps({"bench", "add"}).code, kExitUsage);
  EXPECT_EQ(Kps({"bench", "--jsn", "x"}).code, kExitUsage);
}

TEST(ParseShapeTest, AcceptsCommonSpellings) {
  EXPECT_EQ(*ParseShape("2,3"), (Shape{2, 3}));
  EXPECT_EQ(*ParseShape(" [2, 3] "), (Shape{2, 3}));
  EXPECT_EQ(*ParseShape("(5,)"), (Shape{5}));
  EXPECT_EQ(*ParseShape("4x0x2"), (Shape{4, 0, 2}));
  EXPECT_EQ(*ParseShape(""), Shape{});
  EXPECT_EQ(*ParseShape("[]"), Shape{});
  EXPECT_FALSE(ParseShape("2,,3").ok());
  EXPECT_FALSE(ParseShape("[2,3").ok());
  EXPECT_FALSE(ParseShape("1.5").ok());
  EXPECT_FALSE(ParseShape("4294967296,4294967296").ok());  // overflows byte counts
}

TEST(ParseShapeTest, NumbersMustReadFullyAndObeyTheShapeRule) {
  EXPECT_EQ(*ParseShape("0"), (Shape{0}));
  EXPECT_EQ(*ParseShape("2x0"), (Shape{2, 0}));
  EXPECT_EQ(*ParseShape("0,10"), (Shape{0, 10}));
  EXPECT_EQ(*ParseShape("1073741824,0,1073741824"), (Shape{1073741824, 0, 1073741824}));  // extent 2^60
  for (const char* bad : {"0x10", "0x0", "2, 0x3", "+2", "010", "1e3", "2 3", "2x-3", "-0", "0X10", "2x", "x2",
                          "9223372036854775808", "1073741824,0,1073741825", "1152921504606846977"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseShape(bad).ok());
  }
  EXPECT_TRUE(Contains(std::string(ParseShape("0x10").status().message()), "hexadecimal"));
}

TEST(ToleranceTest, ExactForIntegersLooserForNarrowFloats) {
  EXPECT_EQ(ToleranceFor(DataType::kInt32).rtol, 0);
  EXPECT_EQ(ToleranceFor(DataType::kBool).atol, 0);
  EXPECT_LT(ToleranceFor(DataType::kFloat64).rtol, ToleranceFor(DataType::kFloat32).rtol);
  EXPECT_LT(ToleranceFor(DataType::kFloat32).rtol, ToleranceFor(DataType::kFloat16).rtol);
  EXPECT_LE(ToleranceFor(DataType::kFloat16).rtol, ToleranceFor(DataType::kBFloat16).rtol);
}

// The rows must line up with /work/shared/bench/workloads.py: same names and byte rule.
TEST(BenchWorkloadsTest, MatchWorkloadsPy) {
  const int64_t m256 = int64_t{1} << 28;
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"copy_f32_256M", 2 * m256 * 4},
      {"add_f32_256M", 3 * m256 * 4},
      {"add_f16_256M", 3 * m256 * 2},
      {"add_bf16_256M", 3 * m256 * 2},
      {"add_f32_odd", int64_t{3} * 100000007 * 4},
      // Broadcast: the big input and the output once, the small input once.
      {"add_bcast_row_f32", (2 * int64_t{8192} * 8192 + 8192) * 4},
      {"add_bcast_col_f32", (2 * int64_t{8192} * 8192 + 8192) * 4},
      {"add_bcast_nchw_f16", (2 * int64_t{64} * 256 * 56 * 56 + 256) * 2},
      {"mul_f32_256M", 3 * m256 * 4},
      {"exp_f32_256M", 2 * m256 * 4},
      // Reductions: the input once, the output (without the reduced dims) once.
      {"sum_all_f32_256M", (m256 + 1) * 4},
      {"sum_last_f32_8Kx8K", (int64_t{8192} * 8192 + 8192) * 4},
      {"sum_first_f32_8Kx8K", (int64_t{8192} * 8192 + 8192) * 4},
      {"sum_mid_f32_256x1Kx256", (int64_t{256} * 1024 * 256 + 256 * 256) * 4},
      {"sum_last_f32_1Mx32", (int64_t{1} << 20) * 33 * 4},
      {"sum_last_f16_8Kx8K", (int64_t{8192} * 8192 + 8192) * 2},
      {"max_last_f32_8Kx8K", (int64_t{8192} * 8192 + 8192) * 4},
      {"mean_hw_f16_64x256x56x56", (int64_t{64} * 256 * 56 * 56 + 64 * 256) * 2},
      // Scans: the input once, the output (x's shape) once.
      {"cumsum_f32_256M", 2 * m256 * 4},
      {"cumsum_last_f32_8Kx8K", 2 * int64_t{8192} * 8192 * 4},
      {"cumsum_first_f32_8Kx8K", 2 * int64_t{8192} * 8192 * 4},
      // Sorts: sort writes values and int64 indices, argsort indices, topk k of each per row.
      {"sort_f32_64M", (int64_t{1} << 26) * (4 + 4 + 8)},
      {"argsort_rows_f32_64Kx128", int64_t{65536} * 128 * (4 + 8)},
      {"argsort_rows_f32_4Kx4K", int64_t{4096} * 4096 * (4 + 8)},
      {"topk8_rows_f32_4Kx32K", int64_t{4096} * 32768 * 4 + int64_t{4096} * 8 * (4 + 8)},
      // upsample 2x: the input once, the output (4 times as large) once.
      {"upsample2x_f32_16x64x256x256", int64_t{16} * 64 * 256 * 256 * (1 + 4) * 4},
      // index_add out of place: x, source and the int64 index read, out written.
      {"index_add_f32_1Mx256", ((int64_t{1} << 20) * 256 * 2 + (int64_t{1} << 18) * 256) * 4 + (int64_t{1} << 18) * 8},
      {"dot_f16_256M", (2 * m256 + 1) * 2},
      // Not in workloads.py (KPS's own conv1d row): x, w, and the n + m - 1 outputs.
      {"conv1d_f32_16M_k127", ((int64_t{1} << 24) + 127 + (int64_t{1} << 24) + 126) * 4},
  };
  const auto& workloads = BenchWorkloads();
  ASSERT_EQ(workloads.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(workloads[i].name, want[i].first);
    EXPECT_EQ(MinBytesMoved(workloads[i]), want[i].second) << want[i].first;
  }
}

}  // namespace
}  // namespace cli
}  // namespace kps
