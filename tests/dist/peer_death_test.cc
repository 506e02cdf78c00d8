// A peer that dies mid-run. Under `build/kps launch --nproc N -- build/tests/peer_death_test`
// (N >= 2; skipped in a world of 1, and without a GPU or NCCL) every rank joins the world
// and completes one all_reduce; then the last rank exits, and the others' next all_reduce
// must end in an error within the communicator's timeout (Synchronize aborts it), never a
// hang. A binary of its own: after it the world is gone.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dist/communicator.h"
#include "dist/rendezvous.h"
#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/tensor.h"
#include "testing/support.h"

namespace kps {
namespace {

TEST(PeerDeathTest, ACollectiveWithADeadPeerEndsWithinTheTimeout) {
  KPS_SKIP_WITHOUT_GPU();
  if (!dist::NcclLibrary().ok()) {
    if (testing::GpuRequired()) FAIL() << dist::NcclLibrary().status();
    GTEST_SKIP() << dist::NcclLibrary().status();
  }
  auto me = dist::ProcessInfoFromEnv();
  ASSERT_TRUE(me.ok()) << me.status();
  if (me->world_size < 2) {
    GTEST_SKIP() << "needs two ranks or more: build/kps launch --nproc 2 -- build/tests/peer_death_test";
  }
  const absl::Duration timeout = absl::Seconds(10);
  auto world = dist::InitWorld(timeout);
  ASSERT_TRUE(world.ok()) << world.status();
  const Stream stream = Stream::Cuda();
  std::vector<float> host(1 << 20, 1.0f);
  auto x = Tensor::FromVector<float>(host, Shape{static_cast<int64_t>(host.size())});
  ASSERT_TRUE(x.ok()) << x.status();
  auto dx = x->To(DeviceType::kCuda, stream);
  ASSERT_TRUE(dx.ok()) << dx.status();
  // Every rank is alive: the first all_reduce completes.
  ASSERT_TRUE(Call("all_reduce").Input("x", *dx).Output("out", *dx).Attr("op", "sum").OnStream(stream).Run().ok());
  ASSERT_TRUE((*world)->Synchronize(stream).ok());
  if (me->rank == me->world_size - 1) {
    std::fflush(nullptr);
    _exit(0);  // dies without a word to the others
  }
  const absl::Time start = absl::Now();
  absl::Status s =
      Call("all_reduce").Input("x", *dx).Output("out", *dx).Attr("op", "sum").OnStream(stream).Run().status();
  if (s.ok()) s = (*world)->Synchronize(stream);
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(s.ok()) << "an all_reduce with a dead peer succeeded";
  EXPECT_LT(took, timeout + absl::Seconds(20)) << s;
  EXPECT_TRUE((*world)->aborted()) << s;
  std::printf("rank %d: %s after %s\n", me->rank, s.ToString().c_str(), absl::FormatDuration(took).c_str());
}

}  // namespace
}  // namespace kps
