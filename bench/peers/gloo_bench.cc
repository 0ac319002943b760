/*
 * gloo_bench: Gloo's ring and halving-doubling allreduce over its TCP
 * transport, timed the way redcoll-bench times redcoll, for the side-by-side
 * comparison of bench/peers/run.py.
 *
 *   GLOO_RANK=r GLOO_SIZE=p GLOO_STORE=DIR gloo_bench --algo ring|hd
 *       [--sizes MIN:MAX] [--factor F] [--iters N] [--warmup N] [--no-header]
 *
 * run.py starts the p processes; they meet through a gloo FileStore in DIR
 * (a fresh, empty directory per run) and connect a full mesh of TCP pairs on
 * 127.0.0.1.  float32 SUM.  Gloo's allreduce works in place, so before every
 * iteration (outside the timed region) the input is copied into the buffer
 * the algorithm reduces; redcoll-bench and mpi_bench time an out-of-place
 * call, so this favours Gloo slightly.  For every size the algorithm object
 * is built once (that registers its buffers), then the warm-up and timed
 * iterations run, each preceded by a barrier; an iteration's time is the
 * slowest rank's.  The first result is checked on every rank; a wrong one
 * exits with status 1.  Rank 0 prints CSV lines
 *
 *   impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo
 *
 * with impl gloo-ring or gloo-hd.  Not part of the Meson build.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

namespace {

struct Opts {
  bool hd = false;
  size_t minBytes = 8, maxBytes = 16u << 20, factor = 8;
  int iters = 20, warmup = 3;
  bool header = true;
};

bool parseSize(const char* s, size_t* out) {
  char* end;
  unsigned long long v = std::strtoull(s, &end, 10), mul = 1;
  if (end == s) return false;
  if (*end == 'k' || *end == 'K') mul = 1ull << 10;
  else if (*end == 'm' || *end == 'M') mul = 1ull << 20;
  else if (*end == 'g' || *end == 'G') mul = 1ull << 30;
  if (mul != 1) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mul);
  return true;
}

bool parseOpts(int argc, char** argv, Opts* o) {
  bool algoSet = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--no-header") {
      o->header = false;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    if (a == "--algo") {
      if (v != "ring" && v != "hd") return false;
      o->hd = v == "hd";
      algoSet = true;
    } else if (a == "--sizes") {
      size_t colon = v.find(':');
      if (colon == std::string::npos) return false;
      if (!parseSize(v.substr(0, colon).c_str(), &o->minBytes) ||
          !parseSize(v.substr(colon + 1).c_str(), &o->maxBytes))
        return false;
    } else if (a == "--factor") {
      o->factor = static_cast<size_t>(std::atol(v.c_str()));
    } else if (a == "--iters") {
      o->iters = std::atoi(v.c_str());
    } else if (a == "--warmup") {
      o->warmup = std::atoi(v.c_str());
    } else {
      return false;
    }
  }
  return algoSet && o->minBytes >= 4 && o->maxBytes >= o->minBytes && o->factor >= 2 &&
         o->iters >= 1 && o->warmup >= 0;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<bool> finished{false};

void onTerminate() {
  if (finished) std::_Exit(0);
  std::fprintf(stderr, "gloo_bench: terminated by an exception\n");
  std::abort();
}

int envInt(const char* name) {
  const char* s = std::getenv(name);
  return s ? std::atoi(s) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  int rank = envInt("GLOO_RANK"), size = envInt("GLOO_SIZE");
  const char* storeDir = std::getenv("GLOO_STORE");
  if (!parseOpts(argc, argv, &o) || rank < 0 || size < 1 || rank >= size || !storeDir) {
    std::fprintf(stderr,
                 "usage: GLOO_RANK=r GLOO_SIZE=p GLOO_STORE=DIR gloo_bench --algo ring|hd\n"
                 "         [--sizes MIN:MAX] [--factor F] [--iters N] [--warmup N] "
                 "[--no-header]\n");
    return 2;
  }

  std::set_terminate(onTerminate);
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(storeDir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(std::chrono::seconds(120));
  ctx->connectFullMesh(store, dev);

  const size_t maxCount = o.maxBytes / sizeof(float);
  std::vector<float> send(std::max<size_t>(maxCount, 1)), buf(send.size());
  std::vector<double> times(o.iters), all(o.iters);
  gloo::BarrierAllToOne barrier(ctx);
  const char* name = o.hd ? "gloo-hd" : "gloo-ring";
  if (rank == 0 && o.header)
    std::printf("impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo\n");

  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const int count = static_cast<int>(bytes / sizeof(float));
    for (int i = 0; i < count; i++) send[i] = static_cast<float>(rank + 1 + i % 13);
    std::vector<float*> ptrs{buf.data()};
    std::unique_ptr<gloo::Algorithm> algo;
    if (o.hd)
      algo.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
    else
      algo.reset(new gloo::AllreduceRing<float>(ctx, ptrs, count));
    const int n = o.warmup + o.iters;
    for (int it = 0; it < n; it++) {
      std::memcpy(buf.data(), send.data(), static_cast<size_t>(count) * sizeof(float));
      barrier.run();
      double t0 = now();
      algo->run();
      double t = now() - t0;
      if (it == 0) {
        long bad = 0;
        for (int i = 0; i < count; i++)
          bad += buf[i] != static_cast<float>(static_cast<long>(size) * (size + 1) / 2 +
                                              static_cast<long>(size) * (i % 13));
        if (bad) {
          std::fprintf(stderr, "gloo_bench: rank %d: %s %zu bytes: %ld wrong elements\n", rank,
                       name, bytes, bad);
          return 1;
        }
      }
      if (it >= o.warmup) times[it - o.warmup] = t;
    }
    // An iteration lasts as long as its slowest rank.
    all = times;
    std::vector<double*> tptrs{all.data()};
    gloo::AllreduceRing<double>(ctx, tptrs, o.iters, gloo::ReductionFunction<double>::max).run();
    if (rank == 0) {
      std::sort(all.begin(), all.end());
      double med = o.iters % 2 ? all[o.iters / 2] : (all[o.iters / 2 - 1] + all[o.iters / 2]) / 2;
      int k = static_cast<int>(std::ceil(0.99 * o.iters)) - 1;
      k = std::min(std::max(k, 0), o.iters - 1);
      double algbw = med > 0 ? static_cast<double>(bytes) / med * 1e-9 : 0;
      std::printf("%s,allreduce,%d,%zu,%.2f,%.2f,%.4f,%.4f,%s\n", name, size, bytes, med * 1e6,
                  all[k] * 1e6, algbw, algbw * 2.0 * (size - 1) / size,
                  o.hd ? "halving_doubling" : "ring");
      std::fflush(stdout);
    }
    if (bytes > o.maxBytes / o.factor) break;
  }
  // Gloo's TCP pairs treat a peer that closes its socket as an error and
  // throw from their event thread, which calls std::terminate, even when the
  // work is done.  So the ranks meet in a last barrier and leave without
  // tearing the context down; a peer seen closing during that barrier has
  // completed it, so by then every rank's work is known to be done and the
  // terminate handler exits with success.
  std::fflush(stdout);
  std::fflush(stderr);
  finished = true;
  gloo::BarrierAllToAll(ctx).run();
  std::_Exit(0);
}
