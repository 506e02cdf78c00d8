// The NCCL collectives (ops/dist/collective_ops.cc) and communicators (dist/communicator.h).
//
// Without a GPU: the loader's result and errors, the ops' schemas, and every check the
// ops make before a communicator is used, through Call::Infer on placeholder communicators
// and CUDA tensors that hold no memory. With GPUs (skipped otherwise, failing under
// KPS_REQUIRE_GPU=1): every collective and dtype against a host reference, over the world
// the environment describes, so the same binary runs alone (a world of 1) or under
//   build/kps launch --nproc N -- build/tests/collectives_test
// (every rank runs the same tests in the same order; the data of every rank derives from
// one seed that all ranks share, so each computes the reference of the whole world).
// The world, and so every collective here, runs on the default blocking data path; with
// KPS_NCCL_BLOCKING=0 (ctest: collectives_test_nonblocking; under the launcher:
// KPS_NCCL_BLOCKING=0 build/kps launch ...) on the nonblocking one. ASplitOnTheOtherDataPath
// covers the other path either way. ctest also runs it at 2 ranks on both paths where 2 GPUs
// are visible (collectives_test_2ranks_blocking{0,1}).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dist/call_watchdog.h"
#include "dist/communicator.h"
#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/kernel.h"
#include "testing/support.h"
#include "tests/dist/dist_test_util.h"

namespace kps {
namespace {

using ::kps::dist::Communicator;
using ::kps::testing::Contains;

const std::vector<std::string> kCollectives = {"all_reduce", "broadcast",  "reduce", "all_gather",
                                               "reduce_scatter", "all_to_all", "send", "recv"};

// A CUDA tensor with no memory behind it (an address no one reads): for Call::Infer,
// which reads shapes and dtypes only, on machines without a GPU.
Tensor FakeCuda(const Shape& shape, DataType dtype) {
  int64_t n = 1;
  for (int64_t d : shape.dims()) n *= d;
  std::vector<int64_t> strides(shape.rank());
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  auto storage = Storage::Wrap(reinterpret_cast<void*>(uintptr_t{1} << 40), static_cast<size_t>(n) *
                               DataTypeSize(dtype), DeviceType::kCuda, nullptr);
  return *Tensor::FromStorage(storage, dtype, shape, strides, 0);
}

// Groups of placeholder communicators (rank 1 of 4, rank 0 of 1) for the checks that need
// a group's size and rank.
class CollectiveSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dist::SetGroup("test4", Communicator::Placeholder(1, 4));
    dist::SetGroup("test1", Communicator::Placeholder(0, 1));
  }
  void TearDown() override {
    dist::SetGroup("test4", nullptr);
    dist::SetGroup("test1", nullptr);
  }
};

absl::StatusOr<std::vector<Call::OutputSpec>> Infer(const std::string& op, const Tensor& x,
                                                    std::vector<std::pair<std::string, AttrValue>> attrs) {
  Call call(op);
  if (x.defined()) call.Input("x", x);
  for (auto& [name, value] : attrs) call.SetAttr(name, value);
  return call.Infer();
}

TEST_F(CollectiveSchemaTest, EveryCollectiveIsRegisteredForCudaAndEveryDtype) {
  for (const std::string& op : kCollectives) {
    SCOPED_TRACE(op);
    const OpSchema* s = OpRegistry::Global().Find(op);
    ASSERT_NE(s, nullptr);
    EXPECT_GE(s->AttrIndex("group"), 0);
    EXPECT_EQ(s->declared_devices(), std::vector<DeviceType>{DeviceType::kCuda});
    EXPECT_EQ(s->declared_dtypes().size(), static_cast<size_t>(kNumDataTypes));
    for (DataType t : AllDataTypes()) {
      EXPECT_FALSE(KernelRegistry::Global().Find(op)->Get(DeviceType::kCuda, t).defs.empty()) << DataTypeName(t);
    }
  }
  for (const char* op : {"all_reduce", "reduce", "reduce_scatter"}) {
    EXPECT_GE(OpRegistry::Global().Find(op)->AttrIndex("op"), 0);
  }
  for (const char* op : {"broadcast", "reduce"}) EXPECT_GE(OpRegistry::Global().Find(op)->AttrIndex("root"), 0);
}

TEST_F(CollectiveSchemaTest, OutputShapes) {
  const Tensor x = FakeCuda(Shape{8, 3}, DataType::kFloat32);
  auto g = Infer("all_gather", x, {{"group", std::string("test4")}});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0].shape, (Shape{32, 3}));
  auto gs = Infer("all_gather", FakeCuda(Shape{}, DataType::kInt64), {{"group", std::string("test4")}});
  ASSERT_TRUE(gs.ok()) << gs.status();
  EXPECT_EQ((*gs)[0].shape, (Shape{4}));
  EXPECT_EQ((*gs)[0].dtype, DataType::kInt64);
  auto rs = Infer("reduce_scatter", x, {{"group", std::string("test4")}});
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ((*rs)[0].shape, (Shape{2, 3}));
  auto ar = Infer("all_reduce", x, {{"group", std::string("test4")}, {"op", std::string("avg")}});
  ASSERT_TRUE(ar.ok()) << ar.status();
  EXPECT_EQ((*ar)[0].shape, (Shape{8, 3}));
  auto eq = Infer("all_to_all", x, {{"group", std::string("test4")}});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_EQ((*eq)[0].shape, (Shape{8, 3}));
  auto var = Infer("all_to_all", x,
                   {{"group", std::string("test4")},
                    {"input_split_sizes", std::vector<int64_t>{1, 2, 3, 2}},
                    {"output_split_sizes", std::vector<int64_t>{4, 0, 0, 1}}});
  ASSERT_TRUE(var.ok()) << var.status();
  EXPECT_EQ((*var)[0].shape, (Shape{5, 3}));
  auto rv = Call("recv").OnDevice(DeviceType::kCuda).Attr("group", "test4").Attr("peer", 2)
                .Attr("shape", std::vector<int64_t>{2, 5}).Attr("dtype", DataType::kBFloat16).Infer();
  ASSERT_TRUE(rv.ok()) << rv.status();
  EXPECT_EQ((*rv)[0].shape, (Shape{2, 5}));
  EXPECT_EQ((*rv)[0].dtype, DataType::kBFloat16);
  auto sd = Infer("send", x, {{"group", std::string("test4")}, {"peer", int64_t{3}}});
  ASSERT_TRUE(sd.ok()) << sd.status();
  EXPECT_TRUE(sd->empty());
  // Every dtype moves; bool reduces under max and min.
  for (DataType t : AllDataTypes()) {
    EXPECT_TRUE(Infer("broadcast", FakeCuda(Shape{3}, t), {{"group", std::string("test1")}}).ok()) << DataTypeName(t);
  }
  EXPECT_TRUE(Infer("all_reduce", FakeCuda(Shape{3}, DataType::kBool),
                    {{"group", std::string("test1")}, {"op", std::string("max")}}).ok());
}

// Expects `s` to fail with `code`, naming the op and containing each part.
void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& op,
                 const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s;
  const std::string m(s.message());
  EXPECT_TRUE(Contains(m, "op '" + op + "'"));
  for (const std::string& p : parts) EXPECT_TRUE(Contains(m, p));
}

TEST_F(CollectiveSchemaTest, BadAttributesAreNamed) {
  const Tensor x = FakeCuda(Shape{6, 2}, DataType::kFloat32);
  const auto kBad = absl::StatusCode::kInvalidArgument;
  ExpectError(Infer("broadcast", x, {{"group", std::string("test4")}, {"root", int64_t{4}}}).status(), kBad,
              "broadcast", {"attribute 'root' = 4", "group 'test4'", "expected 0..3"});
  ExpectError(Infer("reduce", x, {{"group", std::string("test4")}, {"root", int64_t{-1}}}).status(), kBad, "reduce",
              {"attribute 'root' = -1 is negative"});
  ExpectError(Infer("all_reduce", x, {{"group", std::string("test4")}, {"op", std::string("mean")}}).status(), kBad,
              "all_reduce", {"attribute 'op' = 'mean'", "sum, prod, max, min or avg"});
  ExpectError(Infer("reduce_scatter", x, {{"group", std::string("test4")}}).status(), kBad, "reduce_scatter",
              {"6 rows, not a multiple of the 4 ranks"});
  ExpectError(Infer("reduce_scatter", FakeCuda(Shape{}, DataType::kFloat32), {{"group", std::string("test4")}})
                  .status(), kBad, "reduce_scatter", {"scalar"});
  ExpectError(Infer("all_to_all", x, {{"group", std::string("test4")}}).status(), kBad, "all_to_all",
              {"6 rows, not a multiple of the 4 ranks", "input_split_sizes"});
  ExpectError(Infer("all_to_all", x, {{"group", std::string("test4")},
                                      {"input_split_sizes", std::vector<int64_t>{1, 2, 3, 1}},
                                      {"output_split_sizes", std::vector<int64_t>{1, 1, 1, 1}}}).status(),
              kBad, "all_to_all", {"'input_split_sizes' [1, 2, 3, 1] adds up to 7", "6 rows"});
  ExpectError(Infer("all_to_all", x, {{"group", std::string("test4")},
                                      {"input_split_sizes", std::vector<int64_t>{3, 3}}}).status(),
              kBad, "all_to_all", {"has 2 entries", "one per rank", "(4)"});
  ExpectError(Infer("all_to_all", x, {{"group", std::string("test4")},
                                      {"output_split_sizes", std::vector<int64_t>{1, -1, 1, 1}}}).status(),
              kBad, "all_to_all", {"negative size -1"});
  ExpectError(Infer("send", x, {{"group", std::string("test4")}, {"peer", int64_t{1}}}).status(), kBad, "send",
              {"'peer' = 1 is this rank"});
  ExpectError(Infer("send", x, {{"group", std::string("test4")}, {"peer", int64_t{9}}}).status(), kBad, "send",
              {"'peer' = 9 is not a rank"});
  ExpectError(Infer("send", x, {{"group", std::string("test4")}}).status(), kBad, "send",
              {"missing required attribute 'peer'"});
  ExpectError(Call("recv").OnDevice(DeviceType::kCuda).Attr("group", "test4").Attr("peer", 0).Infer().status(), kBad,
              "recv", {"missing required attribute 'shape'"});
  ExpectError(Call("recv").OnDevice(DeviceType::kCuda).Attr("group", "test4").Attr("peer", 0)
                  .Attr("shape", std::vector<int64_t>{2, -3}).Infer().status(),
              kBad, "recv", {"attribute 'shape'"});
  ExpectError(Infer("all_reduce", FakeCuda(Shape{3}, DataType::kInt16), {{"group", std::string("test4")}}).status(),
              kBad, "all_reduce", {"int16", "cast x to int32"});
  ExpectError(Infer("reduce", FakeCuda(Shape{3}, DataType::kBool), {{"group", std::string("test4")}}).status(), kBad,
              "reduce", {"bool", "'max' (or) and 'min' (and), not 'sum'"});
}

TEST_F(CollectiveSchemaTest, UnknownGroupIsNamed) {
  const Tensor x = FakeCuda(Shape{4}, DataType::kFloat32);
  absl::Status s = Infer("all_reduce", x, {{"group", std::string("nope")}}).status();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()), "op 'all_reduce'"));
  if (dist::NcclLibrary().ok()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_TRUE(Contains(std::string(s.message()), "no communicator group 'nope'"));
    EXPECT_TRUE(Contains(std::string(s.message()), "test1, test4"));
    EXPECT_TRUE(Contains(std::string(s.message()), "InitWorld"));
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;  // why NCCL is unusable comes first
    EXPECT_TRUE(Contains(std::string(s.message()), "NCCL"));
  }
}

TEST_F(CollectiveSchemaTest, CpuTensorsAreRefused) {
  for (const std::string& op : kCollectives) {
    SCOPED_TRACE(op);
    absl::Status s;
    if (op == "recv") {
      s = Call(op).Attr("peer", 0).Attr("shape", std::vector<int64_t>{3}).Run().status();
      ExpectError(s, absl::StatusCode::kInvalidArgument, op, {"runs on CUDA only", "OnDevice(DeviceType::kCuda)"});
      continue;
    }
    Tensor x = *Tensor::FromVector<float>({1, 2, 3, 4}, Shape{4});
    Call call(op);
    call.Input("x", x);
    if (op == "send") call.Attr("peer", 1);
    s = call.Run().status();
    ExpectError(s, absl::StatusCode::kInvalidArgument, op, {"input 'x' is on cpu", "CUDA tensors only"});
  }
}

TEST_F(CollectiveSchemaTest, PlaceholderCommunicatorsRefuseWork) {
  auto c = Communicator::Placeholder(0, 2);
  absl::Status s = c->AllReduce(nullptr, nullptr, 4, DataType::kFloat32, dist::ReduceOp::kSum, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), "placeholder"));
  EXPECT_FALSE(c->Split(0, 0).ok());
  EXPECT_FALSE(c->Split(0, 0, dist::DataPath::kBlocking).ok());
  EXPECT_FALSE(c->Synchronize(Stream::Cuda()).ok());
  EXPECT_EQ(c->data_path(), dist::DataPath::kNonblocking);
  EXPECT_EQ(c->nccl_comm(), nullptr);
  EXPECT_EQ(c->nccl_control_comm(), nullptr);
}

// ---- the data path (KPS_NCCL_BLOCKING) -------------------------------------------------

TEST(DataPathTest, KpsNcclBlockingIsZeroOrOne) {
  for (const char* v : {static_cast<const char*>(nullptr), "", "1"}) {
    auto p = dist::ParseNcclBlocking(v);
    ASSERT_TRUE(p.ok()) << (v == nullptr ? "unset" : v) << ": " << p.status();
    EXPECT_EQ(*p, dist::DataPath::kBlocking);
  }
  auto off = dist::ParseNcclBlocking("0");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(*off, dist::DataPath::kNonblocking);
  for (const char* bad : {"yes", "true", "2", "01", " 1", "1 ", "-1"}) {
    SCOPED_TRACE(bad);
    auto p = dist::ParseNcclBlocking(bad);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string m(p.status().message());
    EXPECT_TRUE(Contains(m, std::string("KPS_NCCL_BLOCKING='") + bad + "'")) << m;
    EXPECT_TRUE(Contains(m, "not 0 or 1")) << m;
  }
  EXPECT_EQ(dist::DataPathName(dist::DataPath::kDefault), "default");
  EXPECT_EQ(dist::DataPathName(dist::DataPath::kNonblocking), "nonblocking");
  EXPECT_EQ(dist::DataPathName(dist::DataPath::kBlocking), "blocking");
}

TEST(DataPathTest, ReadOnceFromTheEnvironment) {
  const char* env = std::getenv("KPS_NCCL_BLOCKING");
  const std::string saved = env != nullptr ? env : "";
  auto want = dist::ParseNcclBlocking(env);
  auto got = dist::DataPathFromEnv();
  ASSERT_EQ(got.ok(), want.ok()) << got.status();
  if (got.ok()) EXPECT_EQ(*got, *want);
  // A later change of the variable moves nothing: every communicator of the process agrees.
  setenv("KPS_NCCL_BLOCKING", got.ok() && *got == dist::DataPath::kBlocking ? "0" : "1", 1);
  auto again = dist::DataPathFromEnv();
  EXPECT_EQ(again.ok(), got.ok());
  if (again.ok() && got.ok()) EXPECT_EQ(*again, *got);
  if (env != nullptr) {
    setenv("KPS_NCCL_BLOCKING", saved.c_str(), 1);
  } else {
    unsetenv("KPS_NCCL_BLOCKING");
  }
}

// With a malformed KPS_NCCL_BLOCKING (the ctest entry collectives_test_bad_blocking_env sets
// "yes"), joining a world fails at once saying so, before it needs a GPU, NCCL or a peer.
TEST(DataPathTest, AMalformedValueIsTheFirstError) {
  const char* env = std::getenv("KPS_NCCL_BLOCKING");
  if (dist::ParseNcclBlocking(env).ok()) {
    GTEST_SKIP() << "run with KPS_NCCL_BLOCKING=yes (ctest: collectives_test_bad_blocking_env)";
  }
  auto world = dist::InitWorld(absl::Seconds(2));
  ASSERT_FALSE(world.ok());
  EXPECT_EQ(world.status().code(), absl::StatusCode::kInvalidArgument) << world.status();
  EXPECT_TRUE(Contains(std::string(world.status().message()), "KPS_NCCL_BLOCKING='")) << world.status();
  dist::ProcessInfo me;
  me.rank = 1;
  me.world_size = 2;
  me.master_port = dist_test::FreePort();
  const absl::Time start = absl::Now();
  auto comm = Communicator::Create(me, 0, absl::Seconds(2));
  ASSERT_FALSE(comm.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "the rendezvous was tried";
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument) << comm.status();
  EXPECT_TRUE(Contains(std::string(comm.status().message()), "KPS_NCCL_BLOCKING='")) << comm.status();
}

// ---- the watchdog over blocking calls (dist/call_watchdog.h) ---------------------------

// Records what the watchdog reports instead of ending the process. Held by the action
// through a shared_ptr: the watchdog thread may run a copy of the action after TearDown.
struct StuckCalls {
  absl::Mutex mu;
  std::vector<std::string> messages ABSL_GUARDED_BY(mu);
  std::vector<std::string> Get() {
    absl::MutexLock lock(&mu);
    return messages;
  }
  // Waits (at most `limit`) for at least `n` messages.
  bool WaitFor(size_t n, absl::Duration limit) {
    const absl::Time end = absl::Now() + limit;
    while (absl::Now() < end) {
      if (Get().size() >= n) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return Get().size() >= n;
  }
};

class CallWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::shared_ptr<StuckCalls> sink = stuck_;
    dist::SetStuckCallActionForTesting([sink](const std::string& m) {
      absl::MutexLock lock(&sink->mu);
      sink->messages.push_back(m);
    });
  }
  void TearDown() override { dist::SetStuckCallActionForTesting(nullptr); }
  std::shared_ptr<StuckCalls> stuck_ = std::make_shared<StuckCalls>();
};

// A limit far above the calls' 20 ms, so that a loaded machine's scheduling cannot reach it.
TEST_F(CallWatchdogTest, CallsThatReturnInTimeAreNotReported) {
  auto watch = std::make_shared<dist::CallWatch>("rank 0 of 2 on cuda:0", absl::Seconds(1));
  dist::WatchCalls(watch);
  const absl::Time end = absl::Now() + absl::Milliseconds(1500);
  int calls = 0;
  while (absl::Now() < end) {
    dist::WatchedCall in(watch.get(), "ncclAllReduce");
    absl::SleepFor(absl::Milliseconds(++calls % 2 == 0 ? 20 : 0));
  }
  absl::SleepFor(absl::Milliseconds(1500));  // idle, outside any call, past the limit
  EXPECT_TRUE(stuck_->Get().empty()) << stuck_->Get()[0];
  EXPECT_GT(calls, 10);
}

TEST_F(CallWatchdogTest, ACallInsidePastItsLimitIsReportedOnce) {
  auto watch = std::make_shared<dist::CallWatch>("rank 1 of 4 on cuda:1", absl::Milliseconds(100));
  dist::WatchCalls(watch);
  const absl::Time start = absl::Now();
  {
    dist::WatchedCall in(watch.get(), "ncclSend");
    ASSERT_TRUE(stuck_->WaitFor(1, absl::Seconds(10))) << "a call stuck for 10 s was not reported";
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
    absl::SleepFor(absl::Milliseconds(300));  // still inside: not reported again
  }
  std::vector<std::string> m = stuck_->Get();
  ASSERT_EQ(m.size(), 1u);
  for (const char* part : {"rank 1 of 4 on cuda:1", "ncclSend has not returned within 100ms", "KPS_NCCL_BLOCKING=0",
                           "exit code 124", "DeadlineExceeded"}) {
    EXPECT_TRUE(Contains(m[0], part)) << part << " in: " << m[0];
  }
  // The next stuck call is reported too.
  {
    dist::WatchedCall in(watch.get(), "all_to_all's NCCL group");
    ASSERT_TRUE(stuck_->WaitFor(2, absl::Seconds(10)));
  }
  EXPECT_TRUE(Contains(stuck_->Get()[1], "all_to_all's NCCL group has not returned")) << stuck_->Get()[1];
}

// The real action, in a child process (a death test, re-executed so that the child has a
// watchdog thread of its own): the message on stderr and exit code 124, from the watchdog's
// thread while the calling thread is still inside the call.
TEST_F(CallWatchdogTest, ByDefaultAStuckCallEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        dist::SetStuckCallActionForTesting(nullptr);
        auto watch = std::make_shared<dist::CallWatch>("rank 0 of 2 on cuda:0", absl::Milliseconds(50));
        dist::WatchCalls(watch);
        dist::WatchedCall in(watch.get(), "ncclAllReduce");
        absl::SleepFor(absl::Seconds(30));
      },
      ::testing::ExitedWithCode(dist::kStuckCallExitCode),
      "rank 0 of 2 on cuda:0: ncclAllReduce has not returned within 50ms");
}

TEST_F(CallWatchdogTest, AWatchDestroyedInsideACallIsDropped) {
  auto watch = std::make_shared<dist::CallWatch>("rank 0 of 1 on cuda:0", absl::Milliseconds(50));
  dist::WatchCalls(watch);
  watch->Enter("ncclCommFinalize");
  watch.reset();  // its communicator is gone: nothing to report
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_TRUE(stuck_->Get().empty()) << stuck_->Get()[0];
}

TEST(ReduceOpTest, Names) {
  for (const char* n : {"sum", "prod", "max", "min", "avg"}) {
    auto op = dist::ParseReduceOp(n);
    ASSERT_TRUE(op.ok()) << n;
    EXPECT_EQ(dist::ReduceOpName(*op), n);
  }
  EXPECT_FALSE(dist::ParseReduceOp("mean").ok());
}

// ---- the loader -------------------------------------------------------------------------

// With KPS_NCCL_LIBRARY naming a file that does not exist (the ctest entry
// collectives_test_missing_nccl sets it), NCCL cannot load, and everything says so.
TEST(NcclMissingTest, LoaderErrorNamesThePathAndTheFix) {
  const char* env = std::getenv("KPS_NCCL_LIBRARY");
  if (env == nullptr || std::string(env).find("nonexistent") == std::string::npos) {
    GTEST_SKIP() << "run with KPS_NCCL_LIBRARY=/nonexistent/libnccl.so.2 (ctest: collectives_test_missing_nccl)";
  }
  auto lib = dist::NcclLibrary();
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string m(lib.status().message());
  EXPECT_TRUE(Contains(m, "NCCL")) << m;
  // A build with NCCL tried the path; a build without it says so instead.
  EXPECT_TRUE(Contains(m, "/nonexistent/libnccl.so.2") || Contains(m, "built without NCCL")) << m;
  dist::ProcessInfo me;
  auto comm = Communicator::Create(me, 0, absl::Seconds(2));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kFailedPrecondition) << comm.status();
  // An op whose group is missing reports the missing library, naming the op.
  absl::Status s = Call("all_reduce").Input("x", FakeCuda(Shape{4}, DataType::kFloat32)).Infer().status();
  ExpectError(s, absl::StatusCode::kFailedPrecondition, "all_reduce", {"NCCL"});
  auto world = dist::InitWorld(absl::Seconds(2));
  EXPECT_FALSE(world.ok());
}

TEST(NcclLoaderTest, LoadsASupportedVersionOrSaysWhy) {
  const char* env = std::getenv("KPS_NCCL_LIBRARY");
  if (env != nullptr && std::string(env).find("nonexistent") != std::string::npos) GTEST_SKIP();
  auto lib = dist::NcclLibrary();
  if (lib.ok()) {
    EXPECT_GE(lib->version, 21800);
    EXPECT_FALSE(lib->path.empty());
    EXPECT_FALSE(lib->version_string.empty());
    std::printf("NCCL %s from %s\n", lib->version_string.c_str(), lib->path.c_str());
  } else {
    EXPECT_EQ(lib.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(Contains(std::string(lib.status().message()), "NCCL"));
  }
}

// A world of 2 with one process: the rendezvous (or the NCCL init) ends within the timeout
// with an error naming the rank and the world, never a hang. Without a GPU or NCCL the
// error comes at once, saying that.
TEST(MissingPeerTest, CreateFailsWithinTheTimeout) {
  dist::ProcessInfo me;
  me.rank = 1;  // a client: connects to a rank 0 that never comes
  me.world_size = 2;
  me.master_port = dist_test::FreePort();
  const absl::Time start = absl::Now();
  auto comm = Communicator::Create(me, 0, absl::Seconds(2));
  const absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_LT(took, absl::Seconds(10));
  const std::string m(comm.status().message());
  EXPECT_TRUE(Contains(m, "rank 1 of 2")) << m;
  if (CudaAvailable() && dist::NcclLibrary().ok()) {
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded) << comm.status();
  }
}

// ---- on GPUs: every collective and dtype against a host reference --------------------

// One seed for every rank of a run: from MASTER_PORT (a fresh port each `kps launch`),
// else fresh.
uint64_t SharedSeed() {
  static const uint64_t seed = [] {
    const char* port = std::getenv("MASTER_PORT");
    return port != nullptr ? 0x9E3779B97F4A7C15ull * (std::strtoull(port, nullptr, 10) + 1) : testing::FreshSeed();
  }();
  return seed;
}

// The world, made once per process (a world of 1 without a launcher's variables).
std::shared_ptr<Communicator> World() {
  static std::shared_ptr<Communicator>* world = [] {
    auto w = dist::InitWorld(absl::Seconds(120));
    if (!w.ok()) {
      ADD_FAILURE() << "InitWorld: " << w.status();
      return new std::shared_ptr<Communicator>();
    }
    std::printf("collectives_test: rank %d of %d on cuda:%d, %s data path, seed %llu\n", (*w)->rank(), (*w)->size(),
                (*w)->cuda_device(), std::string(dist::DataPathName((*w)->data_path())).c_str(),
                static_cast<unsigned long long>(SharedSeed()));
    return new std::shared_ptr<Communicator>(*w);
  }();
  return *world;
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Element i of rank r's input: small values whose sums are exact in every dtype; for
// products -1, 1 or 2 (floats) / -1 or 1 (integers), so that no product overflows.
double Value(int r, int64_t i, DataType t, bool for_prod, uint64_t salt) {
  const uint64_t h = Mix(SharedSeed() ^ Mix(static_cast<uint64_t>(r) * 1000003 + salt) ^ static_cast<uint64_t>(i));
  if (t == DataType::kBool) return static_cast<double>(h & 1);
  if (for_prod) {
    if (IsFloatingPoint(t)) return (h % 3 == 0) ? -1.0 : (h % 3 == 1 ? 1.0 : 2.0);
    return t == DataType::kUInt8 ? 1.0 : ((h & 1) ? 1.0 : -1.0);
  }
  if (t == DataType::kUInt8) return static_cast<double>(h % 7);
  if (IsFloatingPoint(t)) return (static_cast<double>(h % 33) - 16.0) / 4.0;
  return static_cast<double>(h % 7) - 3.0;
}

std::vector<double> Values(int r, int64_t n, DataType t, bool for_prod = false, uint64_t salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = Value(r, i, t, for_prod, salt);
  return v;
}

Tensor OnGpu(const std::vector<double>& v, const Shape& shape, DataType t) {
  return *testing::HostFromDoubles(v, shape, t).To(DeviceType::kCuda);
}

// Reads `t` after waiting (bounded by the communicator's timeout) for the stream.
std::vector<double> Read(const Tensor& t) {
  absl::Status s = World()->Synchronize(Stream::Cuda());
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  return testing::ToDoubles(t);
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, DataType t, double slack = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = testing::RoundTo(t, want[i]);
    ASSERT_LE(std::abs(got[i] - w), testing::Tolerance(t, w) + slack)
        << "element " << i << ": got " << got[i] << ", want " << w << " (" << DataTypeName(t) << ")";
  }
}

class CollectiveGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KPS_SKIP_WITHOUT_GPU();
    if (!dist::NcclLibrary().ok()) {
      if (testing::GpuRequired()) FAIL() << dist::NcclLibrary().status();
      GTEST_SKIP() << dist::NcclLibrary().status();
    }
    comm_ = World();
    ASSERT_NE(comm_, nullptr);
    rank_ = comm_->rank();
    n_ = comm_->size();
  }
  std::shared_ptr<Communicator> comm_;
  int rank_ = 0, n_ = 1;
};

bool Reduces(DataType t, dist::ReduceOp op) {
  return dist::CheckNcclDataType("test", t, true, op).ok();
}

TEST_F(CollectiveGpuTest, AllReduceEveryOpAndDtype) {
  const int64_t len = 1031;
  for (DataType t : AllDataTypes()) {
    for (const char* name : {"sum", "prod", "max", "min", "avg"}) {
      const dist::ReduceOp op = *dist::ParseReduceOp(name);
      if (!Reduces(t, op)) continue;
      SCOPED_TRACE(::testing::Message() << DataTypeName(t) << " " << name);
      const bool prod = op == dist::ReduceOp::kProd;
      std::vector<double> want(len, op == dist::ReduceOp::kProd ? 1.0 : 0.0);
      for (int r = 0; r < n_; ++r) {
        const std::vector<double> v = Values(r, len, t, prod);
        for (int64_t i = 0; i < len; ++i) {
          if (r == 0 && op != dist::ReduceOp::kSum && op != dist::ReduceOp::kAvg && !prod) want[i] = v[i];
          switch (op) {
            case dist::ReduceOp::kSum:
            case dist::ReduceOp::kAvg: want[i] += v[i]; break;
            case dist::ReduceOp::kProd: want[i] *= v[i]; break;
            case dist::ReduceOp::kMax: want[i] = std::max(want[i], v[i]); break;
            case dist::ReduceOp::kMin: want[i] = std::min(want[i], v[i]); break;
          }
        }
      }
      if (op == dist::ReduceOp::kAvg) {
        for (double& w : want) w /= n_;
      }
      Tensor x = OnGpu(Values(rank_, len, t, prod), Shape{len}, t);
      auto out = Call("all_reduce").Input("x", x).Attr("op", name).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      // avg: NCCL divides integer sums (rounding either way) and scales floats by 1/ranks
      // before summing (a rounding per term), so allow that much.
      double slack = 0;
      if (op == dist::ReduceOp::kAvg) slack = IsFloatingPoint(t) ? 3 * testing::Tolerance(t, 4.0) : 1.0;
      ExpectNear(Read(*out), want, t, slack);
    }
  }
}

TEST_F(CollectiveGpuTest, AllReduceInPlaceAndEmpty) {
  const DataType t = DataType::kFloat32;
  Tensor x = OnGpu(Values(rank_, 100, t), Shape{10, 10}, t);
  std::vector<double> want(100, 0.0);
  for (int r = 0; r < n_; ++r) {
    const auto v = Values(r, 100, t);
    for (int i = 0; i < 100; ++i) want[i] += v[i];
  }
  auto out = Call("all_reduce").Input("x", x).Output("out", x).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->raw_data(), x.raw_data());
  ExpectNear(Read(x), want, t);
  auto empty = Call("all_reduce").Input("x", OnGpu({}, Shape{0, 4}, t)).RunOne();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), (Shape{0, 4}));
}

TEST_F(CollectiveGpuTest, BroadcastEveryDtypeAndRoot) {
  const int64_t len = 517;
  for (DataType t : AllDataTypes()) {
    for (int root = 0; root < n_; ++root) {
      SCOPED_TRACE(::testing::Message() << DataTypeName(t) << " root " << root);
      Tensor x = OnGpu(Values(rank_, len, t), Shape{len}, t);
      auto out = Call("broadcast").Input("x", x).Attr("root", root).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectNear(Read(*out), Values(root, len, t), t);
    }
  }
}

TEST_F(CollectiveGpuTest, ReduceToTheLastRank) {
  const int64_t len = 257;
  const int root = n_ - 1;
  for (DataType t : AllDataTypes()) {
    for (const char* name : {"sum", "max"}) {
      const dist::ReduceOp op = *dist::ParseReduceOp(name);
      if (!Reduces(t, op)) continue;
      SCOPED_TRACE(::testing::Message() << DataTypeName(t) << " " << name);
      std::vector<double> want = Values(0, len, t);
      for (int r = 1; r < n_; ++r) {
        const auto v = Values(r, len, t);
        for (int64_t i = 0; i < len; ++i) {
          want[i] = op == dist::ReduceOp::kSum ? want[i] + v[i] : std::max(want[i], v[i]);
        }
      }
      Tensor x = OnGpu(Values(rank_, len, t), Shape{len}, t);
      auto out = Call("reduce").Input("x", x).Attr("op", name).Attr("root", root).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<double> got = Read(*out);
      if (rank_ == root) ExpectNear(got, want, t);
    }
  }
}

TEST_F(CollectiveGpuTest, AllGatherEveryDtype) {
  for (DataType t : AllDataTypes()) {
    SCOPED_TRACE(DataTypeName(t));
    Tensor x = OnGpu(Values(rank_, 15, t), Shape{3, 5}, t);
    auto out = Call("all_gather").Input("x", x).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->shape(), (Shape{3 * n_, 5}));
    std::vector<double> want;
    for (int r = 0; r < n_; ++r) {
      const auto v = Values(r, 15, t);
      want.insert(want.end(), v.begin(), v.end());
    }
    ExpectNear(Read(*out), want, t);
  }
}

TEST_F(CollectiveGpuTest, ReduceScatterEveryDtype) {
  const int64_t k = 4, cols = 3, len = n_ * k * cols;
  for (DataType t : AllDataTypes()) {
    if (!Reduces(t, dist::ReduceOp::kSum)) continue;
    SCOPED_TRACE(DataTypeName(t));
    std::vector<double> want(k * cols, 0.0);
    for (int r = 0; r < n_; ++r) {
      const auto v = Values(r, len, t);
      for (int64_t i = 0; i < k * cols; ++i) want[i] += v[rank_ * k * cols + i];
    }
    Tensor x = OnGpu(Values(rank_, len, t), Shape{n_ * k, cols}, t);
    auto out = Call("reduce_scatter").Input("x", x).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->shape(), (Shape{k, cols}));
    ExpectNear(Read(*out), want, t);
  }
}

TEST_F(CollectiveGpuTest, AllToAllEqualSplitsEveryDtype) {
  const int64_t rows_per = 2, cols = 3, len = n_ * rows_per * cols;
  for (DataType t : AllDataTypes()) {
    SCOPED_TRACE(DataTypeName(t));
    Tensor x = OnGpu(Values(rank_, len, t), Shape{n_ * rows_per, cols}, t);
    auto out = Call("all_to_all").Input("x", x).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> want;
    for (int r = 0; r < n_; ++r) {  // block `rank_` of rank r's x
      const auto v = Values(r, len, t);
      want.insert(want.end(), v.begin() + rank_ * rows_per * cols, v.begin() + (rank_ + 1) * rows_per * cols);
    }
    ExpectNear(Read(*out), want, t);
  }
}

TEST_F(CollectiveGpuTest, AllToAllVariableSplits) {
  // Rank r sends (r + j) % 3 rows to rank j (so rank j receives (i + j) % 3 from rank i).
  const int64_t cols = 5;
  auto rows = [](int from, int to) { return static_cast<int64_t>((from + to) % 3); };
  for (DataType t : {DataType::kFloat32, DataType::kInt16, DataType::kBool, DataType::kBFloat16}) {
    SCOPED_TRACE(DataTypeName(t));
    std::vector<int64_t> in_splits, out_splits;
    int64_t in_rows = 0;
    for (int j = 0; j < n_; ++j) {
      in_splits.push_back(rows(rank_, j));
      out_splits.push_back(rows(j, rank_));
      in_rows += rows(rank_, j);
    }
    Tensor x = OnGpu(Values(rank_, in_rows * cols, t), Shape{in_rows, cols}, t);
    auto out = Call("all_to_all").Input("x", x).Attr("input_split_sizes", in_splits)
                   .Attr("output_split_sizes", out_splits).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> want;
    for (int i = 0; i < n_; ++i) {
      int64_t total = 0, start = 0;
      for (int j = 0; j < n_; ++j) {
        if (j == rank_) start = total;
        total += rows(i, j);
      }
      const auto v = Values(i, total * cols, t);
      want.insert(want.end(), v.begin() + start * cols, v.begin() + (start + rows(i, rank_)) * cols);
    }
    ExpectNear(Read(*out), want, t);
  }
}

TEST_F(CollectiveGpuTest, SendRecvRingEveryDtype) {
  if (n_ < 2) GTEST_SKIP() << "send/recv need 2 ranks (run under kps launch --nproc 2)";
  const int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
  for (DataType t : AllDataTypes()) {
    SCOPED_TRACE(DataTypeName(t));
    Tensor x = OnGpu(Values(rank_, 301, t), Shape{301}, t);
    absl::StatusOr<Tensor> got;
    auto send = [&] { return Call("send").Input("x", x).Attr("peer", next).Run().status(); };
    auto recv = [&] {
      got = Call("recv").OnDevice(DeviceType::kCuda).Attr("peer", prev).Attr("shape", std::vector<int64_t>{301})
                .Attr("dtype", t).RunOne();
      return got.status();
    };
    // Even ranks send first, odd ones receive first: no two neighbours both wait to send.
    if (rank_ % 2 == 0) {
      ASSERT_TRUE(send().ok());
      ASSERT_TRUE(recv().ok()) << got.status();
    } else {
      ASSERT_TRUE(recv().ok()) << got.status();
      ASSERT_TRUE(send().ok());
    }
    ExpectNear(Read(*got), Values(prev, 301, t), t);
  }
}

TEST_F(CollectiveGpuTest, SplitGroupsByParity) {
  auto sub = comm_->Split(rank_ % 2, rank_);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_NE(*sub, nullptr);
  EXPECT_EQ((*sub)->size(), (n_ + 1 - rank_ % 2) / 2);
  EXPECT_EQ((*sub)->rank(), rank_ / 2);
  dist::SetGroup("parity", *sub);
  const DataType t = DataType::kInt64;
  std::vector<double> want(64, 0.0);
  for (int r = rank_ % 2; r < n_; r += 2) {
    const auto v = Values(r, 64, t);
    for (int i = 0; i < 64; ++i) want[i] += v[i];
  }
  auto out = Call("all_reduce").Input("x", OnGpu(Values(rank_, 64, t), Shape{64}, t)).Attr("group", "parity")
                 .RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  absl::Status s = (*sub)->Synchronize(Stream::Cuda());
  ASSERT_TRUE(s.ok()) << s;
  ExpectNear(testing::ToDoubles(*out), want, t);
  dist::SetGroup("parity", nullptr);
}

// A tensor on another GPU than the group's communicator is an error naming both (with two
// GPUs or more; each rank picks the GPU after its own).
TEST_F(CollectiveGpuTest, ATensorOnAnotherGpuIsAnError) {
  KPS_SKIP_WITHOUT_GPUS(2);
  const int other = (comm_->cuda_device() + 1) % CudaDeviceCount();
  auto x = Tensor::Empty(Shape{4}, DataType::kFloat32, Device(DeviceType::kCuda, other));
  ASSERT_TRUE(x.ok()) << x.status();
  ExpectError(Call("all_reduce").Input("x", *x).Run().status(), absl::StatusCode::kInvalidArgument, "all_reduce",
              {"input 'x' is on cuda:" + std::to_string(other), "group 'world'"});
}

TEST_F(CollectiveGpuTest, OnAnOwnedStream) {
  auto owned = OwnedCudaStream::Create();
  ASSERT_TRUE(owned.ok()) << owned.status();
  const Stream s = owned->stream();
  const DataType t = DataType::kFloat16;
  Tensor x = *testing::HostFromDoubles(Values(rank_, 64, t), Shape{64}, t).To(DeviceType::kCuda, s);
  auto out = Call("all_gather").Input("x", x).OnStream(s).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  absl::Status done = comm_->Synchronize(s);
  ASSERT_TRUE(done.ok()) << done;
  std::vector<double> want;
  for (int r = 0; r < n_; ++r) {
    const auto v = Values(r, 64, t);
    want.insert(want.end(), v.begin(), v.end());
  }
  ExpectNear(testing::ToDoubles(*out), want, t);
  x = Tensor();
  *out = Tensor();
}

// all_reduce and all_gather captured into one CUDA graph on an owned stream, then the graph
// replayed twice over new inputs written in place. On the blocking data path (the default)
// the capture must work; on the nonblocking one an enqueue may answer ncclInProgress, which
// NCCL does not allow inside a capture, so there the call either works or returns an error
// naming the op (never a crash or a broken stream).
TEST_F(CollectiveGpuTest, CapturedInACudaGraphAndReplayed) {
  auto owned = OwnedCudaStream::Create(comm_->cuda_device());
  ASSERT_TRUE(owned.ok()) << owned.status();
  const Stream s = owned->stream();
  const cudaStream_t h = s.cuda_stream();
  const DataType t = DataType::kFloat32;
  const int64_t len = 257;
  const Device gpu(DeviceType::kCuda, comm_->cuda_device());
  auto x = Tensor::Empty(Shape{len}, t, gpu, s);
  auto sum = Tensor::Empty(Shape{len}, t, gpu, s);
  auto gathered = Tensor::Empty(Shape{len * n_}, t, gpu, s);
  ASSERT_TRUE(x.ok() && sum.ok() && gathered.ok());
  ASSERT_TRUE(s.Synchronize().ok());

  ASSERT_EQ(cudaStreamBeginCapture(h, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  absl::Status called = Call("all_reduce").Input("x", *x).Output("out", *sum).OnStream(s).Run().status();
  if (called.ok()) called = Call("all_gather").Input("x", *x).Output("out", *gathered).OnStream(s).Run().status();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(h, &graph);
  if (comm_->data_path() == dist::DataPath::kBlocking) {
    ASSERT_TRUE(called.ok()) << called;
  } else if (!called.ok()) {
    EXPECT_TRUE(Contains(std::string(called.message()), "all_")) << called;
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    std::printf("the nonblocking data path refused the capture: %s\n", std::string(called.message()).c_str());
    return;
  }
  ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (uint64_t replay = 1; replay <= 2; ++replay) {
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    const Tensor in =
        *testing::HostFromDoubles(Values(rank_, len, t, false, replay), Shape{len}, t).To(DeviceType::kCuda, s);
    ASSERT_EQ(cudaMemcpyAsync(x->raw_data(), in.raw_data(), in.nbytes(), cudaMemcpyDeviceToDevice, h), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, h), cudaSuccess);
    absl::Status done = comm_->Synchronize(s);
    ASSERT_TRUE(done.ok()) << done;
    std::vector<double> want_sum(len, 0.0), want_gathered;
    for (int r = 0; r < n_; ++r) {
      const auto v = Values(r, len, t, false, replay);
      for (int64_t i = 0; i < len; ++i) want_sum[i] += v[i];
      want_gathered.insert(want_gathered.end(), v.begin(), v.end());
    }
    ExpectNear(testing::ToDoubles(*sum), want_sum, t);
    ExpectNear(testing::ToDoubles(*gathered), want_gathered, t);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// The world's data path is KPS_NCCL_BLOCKING's; on the blocking path the data calls go to a
// twin of the communicator that creation and Split use.
TEST_F(CollectiveGpuTest, TheWorldFollowsKpsNcclBlocking) {
  auto want = dist::DataPathFromEnv();
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(comm_->data_path(), *want);
  ASSERT_NE(comm_->nccl_comm(), nullptr);
  ASSERT_NE(comm_->nccl_control_comm(), nullptr);
  if (*want == dist::DataPath::kBlocking) {
    EXPECT_NE(comm_->nccl_comm(), comm_->nccl_control_comm());
  } else {
    EXPECT_EQ(comm_->nccl_comm(), comm_->nccl_control_comm());
  }
}

// A duplicate of the world on the data path the world does not use, and a split of it (which
// keeps its path): a collective, all_to_all's group and a send/recv ring on each, Synchronize,
// then their destruction (a blocking twin finalizes on the calling thread, watched).
TEST_F(CollectiveGpuTest, ASplitOnTheOtherDataPath) {
  const dist::DataPath other =
      comm_->data_path() == dist::DataPath::kBlocking ? dist::DataPath::kNonblocking : dist::DataPath::kBlocking;
  SCOPED_TRACE(std::string(dist::DataPathName(other)));
  auto dup = comm_->Split(0, rank_, other);
  ASSERT_TRUE(dup.ok()) << dup.status();
  ASSERT_NE(*dup, nullptr);
  EXPECT_EQ((*dup)->data_path(), other);
  EXPECT_EQ((*dup)->rank(), rank_);
  EXPECT_EQ((*dup)->size(), n_);
  EXPECT_EQ((*dup)->cuda_device(), comm_->cuda_device());
  EXPECT_EQ((*dup)->nccl_comm() != (*dup)->nccl_control_comm(), other == dist::DataPath::kBlocking);
  auto half = (*dup)->Split(rank_ % 2, rank_);
  ASSERT_TRUE(half.ok()) << half.status();
  ASSERT_NE(*half, nullptr);
  EXPECT_EQ((*half)->data_path(), other);
  dist::SetGroup("other", *dup);
  dist::SetGroup("other_half", *half);
  const DataType t = DataType::kInt32;
  for (const char* group : {"other", "other_half"}) {
    SCOPED_TRACE(group);
    const std::shared_ptr<Communicator>& g = std::string(group) == "other" ? *dup : *half;
    const int first = std::string(group) == "other" ? 0 : rank_ % 2, step = std::string(group) == "other" ? 1 : 2;
    const int m = g->size(), me = g->rank();
    std::vector<double> sum(40, 0.0), gathered;
    for (int r = first; r < n_; r += step) {
      const auto v = Values(r, 40, t, false, 7);
      for (int i = 0; i < 40; ++i) sum[i] += v[i];
    }
    auto ar = Call("all_reduce").Input("x", OnGpu(Values(rank_, 40, t, false, 7), Shape{40}, t))
                  .Attr("group", group).RunOne();
    ASSERT_TRUE(ar.ok()) << ar.status();
    // all_to_all: block j of each rank's [m * 3] rows goes to rank j.
    auto a2a = Call("all_to_all").Input("x", OnGpu(Values(rank_, m * 3, t, false, 8), Shape{m * 3}, t))
                   .Attr("group", group).RunOne();
    ASSERT_TRUE(a2a.ok()) << a2a.status();
    std::vector<double> want_a2a;
    for (int j = 0; j < m; ++j) {
      const auto v = Values(first + j * step, m * 3, t, false, 8);
      want_a2a.insert(want_a2a.end(), v.begin() + me * 3, v.begin() + (me + 1) * 3);
    }
    absl::StatusOr<Tensor> got;
    if (m >= 2) {
      const int next = (me + 1) % m, prev = (me + m - 1) % m;
      Tensor x = OnGpu(Values(rank_, 17, t, false, 9), Shape{17}, t);
      auto send = [&] { return Call("send").Input("x", x).Attr("peer", next).Attr("group", group).Run().status(); };
      auto recv = [&] {
        got = Call("recv").OnDevice(DeviceType::kCuda).Attr("peer", prev).Attr("group", group)
                  .Attr("shape", std::vector<int64_t>{17}).Attr("dtype", t).RunOne();
        return got.status();
      };
      if (me % 2 == 0) {
        ASSERT_TRUE(send().ok());
        ASSERT_TRUE(recv().ok()) << got.status();
      } else {
        ASSERT_TRUE(recv().ok()) << got.status();
        ASSERT_TRUE(send().ok());
      }
    }
    absl::Status s = g->Synchronize(Stream::Cuda());
    ASSERT_TRUE(s.ok()) << s;
    ExpectNear(testing::ToDoubles(*ar), sum, t);
    ExpectNear(testing::ToDoubles(*a2a), want_a2a, t);
    if (m >= 2) {
      const int prev_world = first + ((me + m - 1) % m) * step;
      ExpectNear(testing::ToDoubles(*got), Values(prev_world, 17, t, false, 9), t);
    }
  }
  dist::SetGroup("other", nullptr);
  dist::SetGroup("other_half", nullptr);
  half->reset();
  dup->reset();
  // The world is untouched by its duplicate's end.
  auto out = Call("all_reduce").Input("x", OnGpu(Values(rank_, 8, t), Shape{8}, t)).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want(8, 0.0);
  for (int r = 0; r < n_; ++r) {
    const auto v = Values(r, 8, t);
    for (int i = 0; i < 8; ++i) want[i] += v[i];
  }
  ExpectNear(Read(*out), want, t);
}

}  // namespace
}  // namespace kps
