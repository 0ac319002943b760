/*
 * The C++ interface (include/redcoll/redcoll.hpp): every member of
 * redcoll::comm_ref on threads for p = 1..9 against a sequential reference
 * in rank order, built-in operators (int64, double, uint8), a
 * non-commutative user operator (2x2 matrix product modulo a prime), a
 * struct with a lambda, predecessor with ranks holding fewer than k values,
 * the array allreduce, errors as redcoll::error and the operator's and the
 * rank function's own exceptions, and the ownership of redcoll::comm.
 *
 * Checks run on the rank threads: test.h's counters are plain ints, so they
 * taken under one mutex (RCHECK).
 */
#include <redcoll/redcoll.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "test.h"

namespace {

std::mutex check_mutex;
/* The condition is evaluated outside the lock: it may be a collective. */
#define RCHECK(cond)                                                          \
  do {                                                                        \
    bool rcheck_ok = static_cast<bool>(cond);                                 \
    std::lock_guard<std::mutex> rcheck_lock(check_mutex);                     \
    test__checks++;                                                           \
    if (!rcheck_ok) {                                                         \
      test__failures++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                         \
  } while (0)

constexpr int max_p = 9;

/* ---- the types and operators of the tests ------------------------------ */

/* A 2x2 matrix modulo a prime: its product is associative, not commutative. */
struct mat {
  uint32_t m[4];
  bool operator==(const mat &o) const { return std::memcmp(m, o.m, sizeof m) == 0; }
};
constexpr uint64_t prime = 1000003;
mat mul(const mat &a, const mat &b) {
  mat c;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      c.m[2 * i + j] = static_cast<uint32_t>(
          (uint64_t{a.m[2 * i]} * b.m[j] + uint64_t{a.m[2 * i + 1]} * b.m[2 + j]) % prime);
  return c;
}
const mat mat_identity{{1, 0, 0, 1}};
mat mat_of(int r) {
  uint32_t x = static_cast<uint32_t>(r);
  return mat{{x + 2, 3 * x + 1, x * x + 5, 7}};
}

/* A struct with a mixed layout (padding included) and a field-wise operator. */
struct stat {
  int64_t count;
  double sum;
  int32_t max;
  bool operator==(const stat &o) const { return count == o.count && sum == o.sum && max == o.max; }
};
stat stat_of(int r) { return stat{r + 1, 0.25 * r, (r * 5) % 7}; }
stat stat_add(const stat &a, const stat &b) {
  return stat{a.count + b.count, a.sum + b.sum, a.max > b.max ? a.max : b.max};
}

int64_t i64_of(int r) { return (r * 37 + 11) % 23 - 7; }
int64_t small_of(int r) { return r % 3 + 1; }
double dbl_of(int r) { return 0.5 * r + 1; }

/* Sequential references: the fold in rank order of f(0..n). */
template <class T, class F, class Op>
T fold(int n, F f, Op op, T init) {
  T acc = init;
  for (int i = 0; i < n; i++) acc = op(acc, f(i));
  return acc;
}

/* ---- static properties ------------------------------------------------- */

using redcoll::detail::builtin_of;
static_assert(builtin_of<int, std::plus<>>::value == redcoll::detail::SUM);
static_assert(builtin_of<double, std::plus<double>>::value == redcoll::detail::SUM);
static_assert(builtin_of<uint8_t, std::multiplies<>>::value == redcoll::detail::PROD);
static_assert(builtin_of<float, redcoll::min<>>::value == redcoll::detail::MIN);
static_assert(builtin_of<int64_t, redcoll::max<int64_t>>::value == redcoll::detail::MAX);
static_assert(builtin_of<unsigned, std::bit_xor<>>::value == redcoll::detail::BXOR);
static_assert(builtin_of<long, redcoll::commutative_op<std::plus<>>>::value ==
              redcoll::detail::SUM);
// Not built in: a user operator.
static_assert(builtin_of<double, std::bit_and<>>::value == redcoll::detail::NONE);
static_assert(builtin_of<bool, std::plus<>>::value == redcoll::detail::NONE);
static_assert(builtin_of<long double, std::plus<>>::value == redcoll::detail::NONE);
static_assert(builtin_of<int, std::plus<long>>::value == redcoll::detail::NONE);
static_assert(builtin_of<stat, std::plus<>>::value == redcoll::detail::NONE);
static_assert(redcoll::detail::dtype_of<char>() >= 0);
static_assert(redcoll::detail::dtype_of<bool>() < 0);

static_assert(!std::is_copy_constructible_v<redcoll::comm>);
static_assert(!std::is_copy_assignable_v<redcoll::comm>);
static_assert(std::is_nothrow_move_constructible_v<redcoll::comm>);
static_assert(std::is_nothrow_move_assignable_v<redcoll::comm>);
static_assert(std::is_trivially_copyable_v<redcoll::comm_ref>);
static_assert(std::is_base_of_v<std::runtime_error, redcoll::error>);

/* ---- cases ------------------------------------------------------------- */

/* Every single-value member with built-in operators on int64 and double,
 * every root and origin. */
void singles_builtin(void) {
  for (int p = 1; p <= max_p; p++) {
    redcoll::threads_run(p, [p](redcoll::comm_ref c) {
      int r = c.rank();
      RCHECK(c.size() == p);
      int64_t v = i64_of(r);
      auto plus = [](int64_t a, int64_t b) { return a + b; };
      RCHECK(c.prefix_sum(v) == fold<int64_t>(r + 1, i64_of, plus, 0));
      RCHECK(c.ex_prefix_sum(v) == fold<int64_t>(r, i64_of, plus, 0));
      // initial goes to rank 0 only.
      RCHECK(c.ex_prefix_sum(v, std::plus<>{}, 1000) ==
             (r == 0 ? 1000 : fold<int64_t>(r, i64_of, plus, 0)));
      auto et = c.ex_prefix_sum_total(v, std::plus<int64_t>{}, 0);
      RCHECK(et.first == fold<int64_t>(r, i64_of, plus, 0));
      RCHECK(et.second == fold<int64_t>(p, i64_of, plus, 0));
      RCHECK(c.all_reduce(v) == fold<int64_t>(p, i64_of, plus, 0));
      auto mn = [](int64_t a, int64_t b) { return b < a ? b : a; };
      auto mx = [](int64_t a, int64_t b) { return b > a ? b : a; };
      RCHECK(c.all_reduce(v, redcoll::min<>{}) == fold<int64_t>(p, i64_of, mn, INT64_MAX));
      RCHECK(c.all_reduce(v, redcoll::max<int64_t>{}) == fold<int64_t>(p, i64_of, mx, INT64_MIN));
      RCHECK(c.prefix_sum(v, redcoll::max<>{}) == fold<int64_t>(r + 1, i64_of, mx, INT64_MIN));
      auto times = [](int64_t a, int64_t b) { return a * b; };
      RCHECK(c.all_reduce(small_of(r), std::multiplies<>{}) ==
             fold<int64_t>(p, small_of, times, 1));
      RCHECK(c.ex_prefix_sum(small_of(r), std::multiplies<>{}, 1) ==
             fold<int64_t>(r, small_of, times, 1));
      // std::bit_xor on an unsigned type.
      uint32_t u = 1u << r;
      RCHECK(c.all_reduce(u, std::bit_xor<>{}) == (1u << p) - 1);
      for (int root = 0; root < p; root++) {
        int64_t got = c.reduce(v, root);
        RCHECK(got == (r == root ? fold<int64_t>(p, i64_of, plus, 0) : v));
        RCHECK(c.broadcast(v * 10 + r, root) == i64_of(root) * 10 + root);
      }
      std::vector<int64_t> all = c.all_gather(v);
      RCHECK(all.size() == static_cast<size_t>(p));
      for (int i = 0; i < p && i < static_cast<int>(all.size()); i++) RCHECK(all[i] == i64_of(i));
      c.barrier();

      double d = dbl_of(r);
      auto dplus = [](double a, double b) { return a + b; };
      RCHECK(c.prefix_sum(d) == fold<double>(r + 1, dbl_of, dplus, 0.0));
      RCHECK(c.ex_prefix_sum_total(d).second == fold<double>(p, dbl_of, dplus, 0.0));
      RCHECK(c.all_reduce(d, std::plus<double>{}) == fold<double>(p, dbl_of, dplus, 0.0));
      RCHECK(c.all_reduce(d, redcoll::min<double>{}) == 1.0);
      RCHECK(c.reduce(d, p - 1, redcoll::max<>{}) == (r == p - 1 ? dbl_of(p - 1) : d));
      // uint8 sum wraps modulo 256, as the built-in operator does.
      uint8_t b = static_cast<uint8_t>(200 + r);
      RCHECK(c.all_reduce(b) ==
             static_cast<uint8_t>(fold<int>(p, [](int i) { return 200 + i; }, std::plus<>{}, 0)));
    });
  }
}

/* A non-commutative lambda: results in rank order, on every rank the same. */
void noncommutative(void) {
  for (int p = 1; p <= max_p; p++) {
    redcoll::threads_run(p, [p](redcoll::comm_ref c) {
      int r = c.rank();
      mat v = mat_of(r);
      auto op = [](const mat &a, const mat &b) { return mul(a, b); };
      RCHECK(c.prefix_sum(v, op) == fold(r + 1, mat_of, mul, mat_identity));
      RCHECK(c.ex_prefix_sum(v, op, mat_identity) == fold(r, mat_of, mul, mat_identity));
      auto et = c.ex_prefix_sum_total(v, op, mat_identity);
      RCHECK(et.first == fold(r, mat_of, mul, mat_identity));
      RCHECK(et.second == fold(p, mat_of, mul, mat_identity));
      mat total = c.all_reduce(v, op);
      RCHECK(total == fold(p, mat_of, mul, mat_identity));
      // The same bits everywhere: every rank's result gathered and compared.
      for (const mat &m : c.all_gather(total)) RCHECK(m == total);
      for (int root = 0; root < p; root++) {
        mat got = c.reduce(v, root, op);
        RCHECK(got == (r == root ? fold(p, mat_of, mul, mat_identity) : v));
      }
      // The array form with a user operator: element i of rank r is
      // mat_of(r + i), so element i's product is mat_of(i) ... mat_of(i+p-1).
      std::vector<mat> a;
      for (int i = 0; i < 50; i++) a.push_back(mat_of(r + i));
      c.allreduce(a.data(), a.size(), op);
      for (int i = 0; i < 50; i++)
        RCHECK(a[i] == fold(p, [i](int k) { return mat_of(k + i); }, mul, mat_identity));
    });
  }
}

/* A struct with a field-wise lambda, plain and declared commutative; a
 * mutable lambda that counts its calls (with p > 1 some rank combines). */
void struct_type(void) {
  for (int p = 1; p <= max_p; p++) {
    std::atomic<int> combined{0};
    redcoll::threads_run(p, [p, &combined](redcoll::comm_ref c) {
      int r = c.rank();
      stat s = stat_of(r);
      stat zero{0, 0.0, INT32_MIN};
      RCHECK(c.all_reduce(s, stat_add) == fold(p, stat_of, stat_add, zero));
      RCHECK(c.all_reduce(s, redcoll::commutative(stat_add)) == fold(p, stat_of, stat_add, zero));
      RCHECK(c.prefix_sum(s, stat_add) == fold(r + 1, stat_of, stat_add, zero));
      RCHECK(c.ex_prefix_sum(s, stat_add, zero) == fold(r, stat_of, stat_add, zero));
      auto et = c.ex_prefix_sum_total(s, redcoll::commutative(stat_add), zero);
      RCHECK(et.first == fold(r, stat_of, stat_add, zero));
      RCHECK(et.second == fold(p, stat_of, stat_add, zero));
      RCHECK(c.reduce(s, 0, stat_add) == (r == 0 ? fold(p, stat_of, stat_add, zero) : s));
      RCHECK(c.broadcast(s, p / 2) == stat_of(p / 2));
      std::vector<stat> all = c.all_gather(s);
      for (int i = 0; i < p; i++) RCHECK(all[i] == stat_of(i));
      int calls = 0;
      auto counting = [calls, &combined](const stat &a, const stat &b) mutable {
        calls++;
        combined.fetch_add(1);
        return stat_add(a, b);
      };
      RCHECK(c.all_reduce(s, counting) == fold(p, stat_of, stat_add, zero));
    });
    CHECK(p == 1 || combined.load() > 0);
  }
}

/* predecessor(k, mine) against the concatenation of the ranks before, with
 * ranks that hold none, fewer than k and more than k values. */
void predecessor(void) {
  auto count_of = [](int r, int shape) {
    switch (shape) {
      case 0: return (r * 7 + 3) % 4;  // 3, 2, 1, 0, 3, ...
      case 1: return r % 2 == 0 ? 0 : 5;
      default: return 1;
    }
  };
  for (int p = 1; p <= max_p; p++) {
    for (int shape = 0; shape < 3; shape++) {
      redcoll::threads_run(p, [&](redcoll::comm_ref c) {
        int r = c.rank();
        std::vector<stat> mine;
        for (int i = 0; i < count_of(r, shape); i++) mine.push_back(stat{r, 0.5 * i, i});
        std::vector<stat> before;
        for (int q = 0; q < r; q++)
          for (int i = 0; i < count_of(q, shape); i++) before.push_back(stat{q, 0.5 * i, i});
        for (size_t k : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
          std::vector<stat> got = c.predecessor(k, mine);
          size_t n = before.size() < k ? before.size() : k;
          std::vector<stat> want(before.end() - static_cast<std::ptrdiff_t>(n), before.end());
          RCHECK(got == want);
        }
        // Built-in type, the typical use: the last element of the ranks before.
        std::vector<int> ints(static_cast<size_t>(count_of(r, shape)), r);
        std::vector<int> last = c.predecessor(1, ints);
        int want = -1;
        for (int q = 0; q < r; q++)
          if (count_of(q, shape) > 0) want = q;
        RCHECK(last.size() == (want < 0 ? 0u : 1u));
        if (!last.empty()) RCHECK(last[0] == want);
      });
    }
  }
}

/* allreduce(T*, n, op) in place on arithmetic types and counts 0, 1, 7, 1000. */
void array_allreduce(void) {
  for (int p = 1; p <= max_p; p++) {
    redcoll::threads_run(p, [p](redcoll::comm_ref c) {
      int r = c.rank();
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
        std::vector<int32_t> a(n), b(n);
        std::vector<double> d(n);
        std::vector<uint64_t> u(n);
        for (size_t i = 0; i < n; i++) {
          a[i] = static_cast<int32_t>(i) * (r + 1) - r;
          b[i] = a[i];
          d[i] = 0.25 * static_cast<double>(i) + r;
          u[i] = uint64_t{1} << ((r + i) % 64);
        }
        c.allreduce(a.data(), n);
        c.allreduce(b.data(), n, redcoll::max<>{});
        c.allreduce(d.data(), n, std::plus<double>{});
        c.allreduce(u.data(), n, [](uint64_t x, uint64_t y) { return x | y; });
        int64_t ranks = int64_t{p} * (p + 1) / 2;
        for (size_t i = 0; i < n; i++) {
          int64_t ii = static_cast<int64_t>(i);
          RCHECK(a[i] == ii * ranks - int64_t{p} * (p - 1) / 2);
          RCHECK(b[i] == (ii * p - (p - 1) > ii ? ii * p - (p - 1) : ii));
          RCHECK(d[i] == 0.25 * static_cast<double>(i) * p + static_cast<double>(p) * (p - 1) / 2);
          uint64_t want = 0;
          for (int q = 0; q < p; q++) want |= uint64_t{1} << ((q + i) % 64);
          RCHECK(u[i] == want);
        }
      }
    });
  }
}

/* Errors: an invalid root or origin throws redcoll::error(REDCOLL_EINVAL) on
 * every rank and leaves the communicator usable; the threads runner's own
 * failure; an exception from a user operator and one from a rank function
 * come back out of threads_run as they were thrown. */
void errors(void) {
  for (int p = 1; p <= 5; p++) {
    redcoll::threads_run(p, [p](redcoll::comm_ref c) {
      for (int bad : {p, -1}) {
        try {
          (void)c.reduce(1.0, bad);
          RCHECK(!"reduce with an invalid root did not throw");
        } catch (const redcoll::error &e) {
          RCHECK(e.status() == REDCOLL_EINVAL);
          RCHECK(std::string(e.name()) == "REDCOLL_EINVAL");
          RCHECK(std::string(e.what()).find("redcoll_reduce: REDCOLL_EINVAL") == 0);
        }
        try {
          (void)c.broadcast(1, bad);
          RCHECK(!"broadcast with an invalid origin did not throw");
        } catch (const redcoll::error &e) {
          RCHECK(e.status() == REDCOLL_EINVAL);
        }
      }
      // Nothing was sent: the communicator still works.
      RCHECK(c.all_reduce(1) == p);
    });
  }

  try {
    redcoll::threads_run(0, [](redcoll::comm_ref) {});
    CHECK(!"threads_run(0) did not throw");
  } catch (const redcoll::error &e) {
    CHECK(e.status() == REDCOLL_EINVAL);
    CHECK(std::string(e.what()).find("redcoll_threads_run") == 0);
  }
  // A null communicator: the C library's EINVAL.
  try {
    redcoll::comm_ref none;
    CHECK(!none);
    none.barrier();
    CHECK(!"barrier on an empty comm_ref did not throw");
  } catch (const redcoll::error &e) {
    CHECK(e.status() == REDCOLL_EINVAL);
  }

  // predecessor with another k on one rank: the windows' lengths differ.
  for (int p = 2; p <= 6; p++) {
    try {
      redcoll::threads_run(p, [](redcoll::comm_ref c) {
        std::vector<int> v(3, c.rank());
        (void)c.predecessor(c.rank() == 1 ? 1 : 2, v);
      });
      CHECK(!"predecessor with different k did not throw");
    } catch (const redcoll::error &e) {
      CHECK_INT(e.status(), REDCOLL_EMISMATCH);
    }
  }

  // The operator throws: the thrower aborts the communicator, its peers'
  // next collective fails, the operator's exception comes out of the runner.
  for (int p = 2; p <= 5; p++) {
    try {
      redcoll::threads_run(p, [](redcoll::comm_ref c) {
        auto boom = [](const stat &, const stat &) -> stat { throw std::domain_error("boom"); };
        (void)c.all_reduce(stat_of(c.rank()), boom);
        c.barrier();
      });
      CHECK(!"an operator's exception was lost");
    } catch (const std::domain_error &e) {
      CHECK(std::string(e.what()) == "boom");
    } catch (const std::exception &e) {
      CHECK_MSG(false, "p=%d: unexpected %s", p, e.what());
    }
  }

  // A rank function throws while the others wait in a barrier.
  try {
    redcoll::threads_run(4, [](redcoll::comm_ref c) {
      if (c.rank() == 2) throw std::logic_error("rank 2 gives up");
      c.barrier();
    });
    CHECK(!"a rank's exception was lost");
  } catch (const std::logic_error &e) {
    CHECK(std::string(e.what()) == "rank 2 gives up");
  } catch (const std::exception &e) {
    CHECK_MSG(false, "unexpected %s", e.what());
  }
}

/* redcoll::comm owns: dup, split, moves, release and reset; collectives on
 * the owned communicators. */
void ownership(void) {
  for (int p = 1; p <= max_p; p++) {
    redcoll::threads_run(p, [p](redcoll::comm_ref world) {
      int r = world.rank();
      redcoll::comm d = world.dup();
      RCHECK(static_cast<bool>(d));
      RCHECK(d.get() != world.get());
      RCHECK(d.size() == p && d.rank() == r);

      redcoll::comm moved(std::move(d));
      RCHECK(!d && d.get() == nullptr);
      RCHECK(moved.all_reduce(r) == p * (p - 1) / 2);

      redcoll::comm target = world.dup();
      target = std::move(moved);  // destroys target's own dup
      RCHECK(!moved);
      RCHECK(target.all_reduce(1) == p);

      // A comm is a comm_ref: a view of it, passed by value.
      auto sum_on = [](redcoll::comm_ref v, int x) { return v.all_reduce(x); };
      RCHECK(sum_on(target, 2) == 2 * p);

      redcoll_comm *raw = target.release();
      RCHECK(!target && raw != nullptr);
      target.reset(raw);
      RCHECK(target.get() == raw);

      // Halves by parity; odd ranks of p = 1 do not exist.
      redcoll::comm half = target.split(r % 2, -r);
      int n = (p + 1 - r % 2) / 2;
      RCHECK(half.size() == n);
      RCHECK(half.rank() == n - 1 - r / 2);  // key -r reverses the order
      RCHECK(half.all_reduce(1) == n);
      redcoll::comm none = target.split(r == 0 ? redcoll::undefined : 0);
      RCHECK(static_cast<bool>(none) == (r != 0));
      if (none) RCHECK(none.size() == p - 1);
      target.reset();
      RCHECK(!target);
    });
  }
}

/* Hosts x threads: 3 processes (threads of a world) x 2 threads each, a
 * prefix sum over the world in rank order, and a throw on one rank coming
 * back out of hier_run. */
void hier(void) {
  redcoll::threads_run(3, [](redcoll::comm_ref procs) {
    redcoll::hier_run(procs, 2, [&procs](redcoll::comm_ref w) {
      RCHECK(w.size() == 6);
      RCHECK(w.rank() / 2 == procs.rank());
      int64_t v = w.rank() + 1;
      RCHECK(w.prefix_sum(v) == (v * (v + 1)) / 2);
      RCHECK(w.all_reduce(v) == 21);
    });
  });
  int caught = 0;
  try {
    redcoll::threads_run(1, [](redcoll::comm_ref procs) {
      redcoll::hier_run(procs, 3, [](redcoll::comm_ref w) {
        if (w.rank() == 1) throw std::runtime_error("rank 1");
        w.barrier();
      });
    });
  } catch (const std::runtime_error &e) {
    caught = std::string(e.what()) == "rank 1";
  }
  RCHECK(caught);
}

}  // namespace

TEST_MAIN(TEST(singles_builtin), TEST(noncommutative), TEST(struct_type), TEST(predecessor),
          TEST(array_allreduce), TEST(errors), TEST(ownership), TEST(hier))
