/*
 * redcoll.hpp — the C++ interface of redcoll: header-only, C++17, over the C
 * library (redcoll.h) and nothing else.
 *
 *   redcoll::comm      owns a redcoll_comm (destroys it; movable, not copyable)
 *   redcoll::comm_ref  views one it does not own (what a rank function gets)
 *   redcoll::error     what every failure throws: status() and what()
 *
 * Both communicator classes offer the same members (comm derives from
 * comm_ref).  The single-value members work for any trivially copyable T and
 * any associative callable Op, T op(const T&, const T&):
 *
 *   prefix_sum, ex_prefix_sum, ex_prefix_sum_total, all_reduce, reduce,
 *   broadcast, all_gather, predecessor, barrier,
 *   allreduce(T *data, size_t n, op) on an array, in place;
 *   dup, split, rank, size, get.
 *
 * Operators.  On an arithmetic T that has a redcoll dtype (the integers of 1,
 * 2, 4 and 8 bytes but bool; float and double), std::plus, std::multiplies,
 * redcoll::min, redcoll::max (the transparent <> forms and the <T> ones) and,
 * on integers, std::bit_and, std::bit_or, std::bit_xor are the built-in
 * operators REDCOLL_SUM, PROD, MIN, MAX, BAND, BOR, BXOR: the library's
 * vector kernels run them.  Any other callable (a lambda, an operator on a
 * struct) becomes a user operator (redcoll_op_create) over elements of
 * sizeof(T) bytes, non-commutative unless wrapped in redcoll::commutative():
 * the library then keeps rank order, v_0 (+) v_1 (+) ... (+) v_{p-1}.  Every
 * rank gets the same bits where the C library promises them (all_reduce,
 * the total of ex_prefix_sum_total, in the default results mode).
 *
 * Errors.  A status other than REDCOLL_OK from the library throws
 * redcoll::error; after any but REDCOLL_EINVAL and REDCOLL_ENOTSUP the
 * communicator is broken, as in C.  An exception thrown by a user operator
 * is caught inside the library's callback (it never crosses C frames); the
 * collective then finishes with unspecified values, the communicator is
 * aborted (redcoll_comm_abort: the peers' next collective on it returns
 * REDCOLL_EABORTED) and the operator's exception is rethrown.
 *
 * Threads.  As in C: a communicator is used by one thread at a time.
 */
#ifndef REDCOLL_HPP
#define REDCOLL_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redcoll.h"
#include "hier.h"
#include "threads.h"

namespace redcoll {

/* ------------------------------------------------------------------------ */
/* Errors.                                                                  */
/* ------------------------------------------------------------------------ */

/* A failed call: status() is the redcoll_status (negative), what() reads
 * "redcoll_reduce: REDCOLL_EINVAL: invalid argument" (the C function, the
 * status name, its message). */
class error : public std::runtime_error {
 public:
  error(int status, const char *call)
      : std::runtime_error(std::string(call) + ": " + redcoll_status_name(status) + ": " +
                           redcoll_strerror(status)),
        status_(status) {}
  int status() const noexcept { return status_; }
  /* "REDCOLL_EINVAL". */
  const char *name() const noexcept { return redcoll_status_name(status_); }

 private:
  int status_;
};

/* ------------------------------------------------------------------------ */
/* Operators.                                                               */
/* ------------------------------------------------------------------------ */

/* The smaller operand; the left one when neither is smaller (so a NaN on
 * the left is kept), exactly as REDCOLL_MIN.  min<> is transparent. */
template <class T = void>
struct min {
  constexpr T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
template <>
struct min<void> {
  template <class A>
  constexpr A operator()(const A &a, const A &b) const {
    return b < a ? b : a;
  }
};
/* The larger operand; the left one when neither is larger (REDCOLL_MAX). */
template <class T = void>
struct max {
  constexpr T operator()(const T &a, const T &b) const { return b > a ? b : a; }
};
template <>
struct max<void> {
  template <class A>
  constexpr A operator()(const A &a, const A &b) const {
    return b > a ? b : a;
  }
};

/* An operator declared commutative: the library may then reorder operands
 * (more algorithms qualify).  Built-in operators are commutative anyway. */
template <class Op>
struct commutative_op {
  Op op;
  template <class A, class B>
  decltype(auto) operator()(A &&a, B &&b) {
    return op(std::forward<A>(a), std::forward<B>(b));
  }
  template <class A, class B>
  decltype(auto) operator()(A &&a, B &&b) const {
    return op(std::forward<A>(a), std::forward<B>(b));
  }
};
template <class Op>
commutative_op<std::decay_t<Op>> commutative(Op &&op) {
  return commutative_op<std::decay_t<Op>>{std::forward<Op>(op)};
}

/* The color of a rank that wants no communicator from split(). */
constexpr int undefined = REDCOLL_UNDEFINED;

class comm;

namespace detail {

/* The dtype of an arithmetic T, or -1 when redcoll has none (bool, long
 * double, a type of another size). */
template <class T>
constexpr int dtype_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return -1;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr bool s = std::is_signed_v<T>;
    switch (sizeof(T)) {
      case 1: return s ? REDCOLL_INT8 : REDCOLL_UINT8;
      case 2: return s ? REDCOLL_INT16 : REDCOLL_UINT16;
      case 4: return s ? REDCOLL_INT32 : REDCOLL_UINT32;
      case 8: return s ? REDCOLL_INT64 : REDCOLL_UINT64;
      default: return -1;
    }
  } else if constexpr (std::is_floating_point_v<T> && std::numeric_limits<T>::is_iec559) {
    return sizeof(T) == 4 ? REDCOLL_FLOAT32 : sizeof(T) == 8 ? REDCOLL_FLOAT64 : -1;
  } else {
    return -1;
  }
}

enum builtin { NONE, SUM, PROD, MIN, MAX, BAND, BOR, BXOR };

/* Which built-in operator Op is on elements of type T (NONE: a user op). */
template <class T, class Op>
struct builtin_of {
  static constexpr builtin value = NONE;
};
template <class T, class Op>
struct builtin_of<T, commutative_op<Op>> : builtin_of<T, Op> {};
#define REDCOLL__MAP_OP(FUNCTOR, ID, COND)                                           \
  template <class T>                                                                 \
  struct builtin_of<T, FUNCTOR<void>> {                                              \
    static constexpr builtin value = (dtype_of<T>() >= 0 && (COND)) ? ID : NONE;     \
  };                                                                                 \
  template <class T>                                                                 \
  struct builtin_of<T, FUNCTOR<T>> {                                                 \
    static constexpr builtin value = (dtype_of<T>() >= 0 && (COND)) ? ID : NONE;     \
  };
REDCOLL__MAP_OP(std::plus, SUM, true)
REDCOLL__MAP_OP(std::multiplies, PROD, true)
REDCOLL__MAP_OP(redcoll::min, MIN, true)
REDCOLL__MAP_OP(redcoll::max, MAX, true)
REDCOLL__MAP_OP(std::bit_and, BAND, std::is_integral_v<T>)
REDCOLL__MAP_OP(std::bit_or, BOR, std::is_integral_v<T>)
REDCOLL__MAP_OP(std::bit_xor, BXOR, std::is_integral_v<T>)
#undef REDCOLL__MAP_OP

template <class Op>
struct is_commutative : std::false_type {};
template <class Op>
struct is_commutative<commutative_op<Op>> : std::true_type {};

inline const redcoll_op *builtin_op(builtin b) {
  switch (b) {
    case SUM: return REDCOLL_SUM;
    case PROD: return REDCOLL_PROD;
    case MIN: return REDCOLL_MIN;
    case MAX: return REDCOLL_MAX;
    case BAND: return REDCOLL_BAND;
    case BOR: return REDCOLL_BOR;
    case BXOR: return REDCOLL_BXOR;
    default: return nullptr;
  }
}

inline void check(int rc, const char *call) {
  if (rc != REDCOLL_OK) throw error(rc, call);
}

/* A T read from bytes at any alignment, without a default constructor. */
template <class T>
T load(const void *p) {
  union holder {
    holder() {}
    unsigned char bytes[sizeof(T)];
    T value;
  } h;
  std::memcpy(&h.value, p, sizeof(T));
  return h.value;
}

/* A user operator for one collective: the C callback applies op element by
 * element through copies (the library's buffers have any alignment) and
 * keeps the first exception instead of letting it cross C frames. */
template <class T, class Op>
class user_op {
 public:
  user_op(Op &op, bool commutative) : op_(op) {
    check(redcoll_op_create(&call, sizeof(T), commutative ? 1 : 0, this, &handle_),
          "redcoll_op_create");
  }
  ~user_op() { redcoll_op_destroy(handle_); }
  user_op(const user_op &) = delete;
  user_op &operator=(const user_op &) = delete;
  const redcoll_op *handle() const { return handle_; }
  std::exception_ptr failure() const { return failure_; }

 private:
  static void call(void *out, const void *left, const void *right, size_t count,
                   void *ctx) noexcept {
    user_op *self = static_cast<user_op *>(ctx);
    if (self->failure_) return;
    unsigned char *o = static_cast<unsigned char *>(out);
    const unsigned char *l = static_cast<const unsigned char *>(left);
    const unsigned char *r = static_cast<const unsigned char *>(right);
    try {
      for (size_t i = 0; i < count; i++) {
        T v = static_cast<T>(self->op_(load<T>(l + i * sizeof(T)), load<T>(r + i * sizeof(T))));
        std::memcpy(o + i * sizeof(T), &v, sizeof(T));
      }
    } catch (...) {
      self->failure_ = std::current_exception();
    }
  }

  Op &op_;
  redcoll_op *handle_ = nullptr;
  std::exception_ptr failure_;
};

/* Predecessor's operator on windows of at most k values: a window is a
 * uint64 count n <= k followed by k slots of elem bytes, the n values in
 * the first n slots.  left (+) right keeps the last k values of left's
 * followed by right's: concatenation, cut to its last k, so associative
 * (not commutative). */
struct window_op {
  size_t k, elem;
  std::vector<unsigned char> scratch;
  std::exception_ptr failure;

  size_t bytes() const { return sizeof(uint64_t) + k * elem; }

  static void call(void *out, const void *left, const void *right, size_t count,
                   void *ctx) noexcept {
    window_op *self = static_cast<window_op *>(ctx);
    if (self->failure) return;
    try {
      size_t w = self->bytes();
      self->scratch.resize(w);
      unsigned char *s = self->scratch.data();
      for (size_t i = 0; i < count; i++) {
        const unsigned char *l = static_cast<const unsigned char *>(left) + i * w;
        const unsigned char *r = static_cast<const unsigned char *>(right) + i * w;
        uint64_t nl, nr;
        std::memcpy(&nl, l, sizeof nl);
        std::memcpy(&nr, r, sizeof nr);
        uint64_t from_left = nr >= self->k ? 0 : std::min<uint64_t>(nl, self->k - nr);
        uint64_t from_right = nr >= self->k ? self->k : nr;
        uint64_t n = from_left + from_right;
        std::memset(s, 0, w);
        std::memcpy(s, &n, sizeof n);
        unsigned char *dst = s + sizeof(uint64_t);
        std::memcpy(dst, l + sizeof(uint64_t) + (nl - from_left) * self->elem,
                    static_cast<size_t>(from_left) * self->elem);
        std::memcpy(dst + from_left * self->elem,
                    r + sizeof(uint64_t) + (nr - from_right) * self->elem,
                    static_cast<size_t>(from_right) * self->elem);
        std::memcpy(static_cast<unsigned char *>(out) + i * w, s, w);
      }
    } catch (...) {
      self->failure = std::current_exception();
    }
  }
};

template <class T>
using identity_t = typename std::common_type<T>::type;

}  // namespace detail

/* ------------------------------------------------------------------------ */
/* Communicators.                                                           */
/* ------------------------------------------------------------------------ */

/* A view of a communicator owned elsewhere: copying it copies the pointer.
 * Every collective member must be called by all ranks of the communicator,
 * in the same order, with the same k, root or origin (as in C). */
class comm_ref {
 public:
  comm_ref() noexcept = default;
  explicit comm_ref(redcoll_comm *c) noexcept : c_(c) {}

  /* The C communicator, for every call this header does not wrap. */
  redcoll_comm *get() const noexcept { return c_; }
  /* False for an empty view (a default one, a moved-from comm, a split
   * with redcoll::undefined). */
  explicit operator bool() const noexcept { return c_ != nullptr; }
  int rank() const noexcept { return redcoll_comm_rank(c_); }
  int size() const noexcept { return redcoll_comm_size(c_); }

  /* redcoll_comm_dup: same ranks, channels of its own.  Collective. */
  comm dup();
  /* redcoll_comm_split: ranks with the same color (>= 0) form one
   * communicator ordered by key, then by rank; color redcoll::undefined
   * returns an empty comm.  Collective. */
  comm split(int color, int key = 0);

  /* Inclusive prefix: rank i gets v_0 (+) ... (+) v_i (redcoll_scan).
   * Thrill: PrefixSum. */
  template <class T, class Op = std::plus<>>
  T prefix_sum(const T &v, Op op = Op{}) {
    T out = v;
    with_op<T>(op, "redcoll_scan", [&](redcoll_dtype dt, const redcoll_op *o, size_t n) {
      return redcoll_scan(c_, &v, &out, n, dt, o);
    });
    return out;
  }

  /* Exclusive prefix: rank 0 gets initial, rank i > 0 gets v_0 (+) ... (+)
   * v_{i-1} (initial is not combined into those: pass the identity of op,
   * the default T{} being it for +) (redcoll_exscan).  Thrill: ExPrefixSum. */
  template <class T, class Op = std::plus<>>
  T ex_prefix_sum(const T &v, Op op = Op{}, const detail::identity_t<T> &initial = T{}) {
    T out = initial;
    with_op<T>(op, "redcoll_exscan", [&](redcoll_dtype dt, const redcoll_op *o, size_t n) {
      return redcoll_exscan(c_, &v, &out, n, dt, o);
    });
    return out;
  }

  /* (ex_prefix_sum(v, op, initial), v_0 (+) ... (+) v_{p-1}) in one
   * collective (redcoll_exscan_total); the total has the same bits on every
   * rank.  Thrill: ExPrefixSumTotal. */
  template <class T, class Op = std::plus<>>
  std::pair<T, T> ex_prefix_sum_total(const T &v, Op op = Op{},
                                      const detail::identity_t<T> &initial = T{}) {
    std::pair<T, T> out(initial, v);
    with_op<T>(op, "redcoll_exscan_total", [&](redcoll_dtype dt, const redcoll_op *o, size_t n) {
      return redcoll_exscan_total(c_, &v, &out.first, &out.second, n, dt, o);
    });
    return out;
  }

  /* v_0 (+) ... (+) v_{p-1} on every rank, the same bits everywhere
   * (redcoll_allreduce).  Thrill: AllReduce. */
  template <class T, class Op = std::plus<>>
  T all_reduce(const T &v, Op op = Op{}) {
    T out = v;
    with_op<T>(op, "redcoll_allreduce", [&](redcoll_dtype dt, const redcoll_op *o, size_t n) {
      return redcoll_allreduce(c_, REDCOLL_IN_PLACE, &out, n, dt, o);
    });
    return out;
  }

  /* The reduction at rank root; the other ranks get their own v back
   * (redcoll_reduce).  A root out of range throws REDCOLL_EINVAL on every
   * rank, with nothing sent.  Thrill: Reduce. */
  template <class T, class Op = std::plus<>>
  T reduce(const T &v, int root, Op op = Op{}) {
    T out = v;
    with_op<T>(op, "redcoll_reduce", [&](redcoll_dtype dt, const redcoll_op *o, size_t n) {
      return redcoll_reduce(c_, &v, &out, n, dt, o, root);
    });
    return out;
  }

  /* Rank origin's v on every rank (redcoll_bcast).  Thrill: Broadcast. */
  template <class T>
  T broadcast(const T &v, int origin = 0) {
    static_assert(std::is_trivially_copyable_v<T>, "redcoll: T must be trivially copyable");
    T out = v;
    detail::check(redcoll_bcast(c_, &out, sizeof(T), REDCOLL_UINT8, origin), "redcoll_bcast");
    return out;
  }

  /* Every rank's v, in rank order (redcoll_allgather).  Thrill: AllGather. */
  template <class T>
  std::vector<T> all_gather(const T &v) {
    static_assert(std::is_trivially_copyable_v<T>, "redcoll: T must be trivially copyable");
    int p = size();
    std::vector<T> out(p > 0 ? static_cast<size_t>(p) : 1u, v);
    detail::check(redcoll_allgather(c_, REDCOLL_IN_PLACE, out.data(), sizeof(T), REDCOLL_UINT8),
                  "redcoll_allgather");
    return out;
  }

  /* The last k values of mine_0 ++ mine_1 ++ ... ++ mine_{i-1}, the
   * concatenation of the vectors of the ranks before this one, in rank
   * order; fewer than k (down to none on rank 0) when those ranks hold
   * fewer than k values together.  Any rank may pass any number of values,
   * none included; only its last k can matter.  k must be the same on
   * every rank (another k is a length mismatch); k = 0 returns an empty
   * vector without communicating.  One exclusive scan (redcoll_exscan) of
   * one window of k values, 8 + k * sizeof(T) bytes: ceil(log2 p) rounds
   * with hillis_steele.  Thrill: Predecessor. */
  template <class T>
  std::vector<T> predecessor(size_t k, const std::vector<T> &mine) {
    static_assert(std::is_trivially_copyable_v<T>, "redcoll: T must be trivially copyable");
    std::vector<T> out;
    if (k == 0) return out;
    if (k > (SIZE_MAX - sizeof(uint64_t)) / sizeof(T))
      throw error(REDCOLL_EINVAL, "redcoll::comm::predecessor");
    detail::window_op w{k, sizeof(T), {}, {}};
    std::vector<unsigned char> send(w.bytes()), recv(w.bytes());
    uint64_t n = std::min<uint64_t>(mine.size(), k), none = 0;
    std::memcpy(send.data(), &n, sizeof n);
    if (n > 0)
      std::memcpy(send.data() + sizeof(uint64_t), mine.data() + (mine.size() - n),
                  static_cast<size_t>(n) * sizeof(T));
    std::memcpy(recv.data(), &none, sizeof none);  // rank 0's window: empty
    redcoll_op *op = nullptr;
    detail::check(redcoll_op_create(&detail::window_op::call, w.bytes(), 0, &w, &op),
                  "redcoll_op_create");
    int rc = redcoll_exscan(c_, send.data(), recv.data(), 1, REDCOLL_CUSTOM, op);
    redcoll_op_destroy(op);
    fail_on(w.failure);
    detail::check(rc, "redcoll_exscan");
    uint64_t got;
    std::memcpy(&got, recv.data(), sizeof got);
    out.reserve(static_cast<size_t>(got));
    for (uint64_t i = 0; i < got; i++)
      out.push_back(detail::load<T>(recv.data() + sizeof(uint64_t) + i * sizeof(T)));
    return out;
  }

  /* Returns once every rank has entered it (redcoll_barrier).  Thrill:
   * Barrier. */
  void barrier() { detail::check(redcoll_barrier(c_), "redcoll_barrier"); }

  /* data[0..n) of every rank reduced element-wise, in place, on every rank
   * (redcoll_allreduce with REDCOLL_IN_PLACE): the built-in operators on
   * arithmetic types run the library's vector kernels. */
  template <class T, class Op = std::plus<>>
  void allreduce(T *data, size_t n, Op op = Op{}) {
    with_op<T>(op, "redcoll_allreduce", [&](redcoll_dtype dt, const redcoll_op *o, size_t one) {
      return redcoll_allreduce(c_, REDCOLL_IN_PLACE, data, n * one, dt, o);
    });
  }

 protected:
  redcoll_comm *c_ = nullptr;

 private:
  /* Runs f(dtype, op, 1) with the built-in operator Op maps to on T, or
   * with a user operator made for this call; rethrows what the operator
   * threw (after aborting the communicator), else checks f's status. */
  template <class T, class Op, class F>
  void with_op(Op &op, const char *call, F &&f) {
    static_assert(std::is_trivially_copyable_v<T>, "redcoll: T must be trivially copyable");
    constexpr detail::builtin b = detail::builtin_of<T, std::decay_t<Op>>::value;
    if constexpr (b != detail::NONE) {
      (void)op;
      detail::check(f(static_cast<redcoll_dtype>(detail::dtype_of<T>()), detail::builtin_op(b),
                      size_t{1}),
                    call);
    } else {
      detail::user_op<T, Op> u(op, detail::is_commutative<std::decay_t<Op>>::value);
      int rc = f(REDCOLL_CUSTOM, u.handle(), size_t{1});
      fail_on(u.failure());
      detail::check(rc, call);
    }
  }

  void fail_on(const std::exception_ptr &e) {
    if (!e) return;
    redcoll_comm_abort(c_);
    std::rethrow_exception(e);
  }
};

/* Owns a communicator: destroys it (redcoll_comm_destroy) when it goes, or
 * hands it over by move or release(). */
class comm : public comm_ref {
 public:
  comm() noexcept = default;
  /* Takes ownership of c (may be NULL). */
  explicit comm(redcoll_comm *c) noexcept : comm_ref(c) {}
  comm(const comm &) = delete;
  comm &operator=(const comm &) = delete;
  comm(comm &&o) noexcept : comm_ref(o.release()) {}
  comm &operator=(comm &&o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  ~comm() { redcoll_comm_destroy(c_); }

  /* Gives up ownership: the caller destroys the result. */
  redcoll_comm *release() noexcept {
    redcoll_comm *c = c_;
    c_ = nullptr;
    return c;
  }
  /* Destroys the owned communicator and owns c instead. */
  void reset(redcoll_comm *c = nullptr) noexcept {
    redcoll_comm *old = c_;
    c_ = c;
    redcoll_comm_destroy(old);
  }
};

inline comm comm_ref::dup() {
  redcoll_comm *out = nullptr;
  detail::check(redcoll_comm_dup(c_, &out), "redcoll_comm_dup");
  return comm(out);
}

inline comm comm_ref::split(int color, int key) {
  redcoll_comm *out = nullptr;
  detail::check(redcoll_comm_split(c_, color, key, &out), "redcoll_comm_split");
  return comm(out);
}

/* ------------------------------------------------------------------------ */
/* Running ranks as threads.                                                */
/* ------------------------------------------------------------------------ */

namespace detail {
/* What the rank functions of a run share: the user's callable and what each
 * rank threw (slot = rank - base). */
template <class F>
struct rank_job {
  F *fn;
  int base;
  std::vector<std::exception_ptr> thrown;
};

template <class F>
int rank_entry(redcoll_comm *c, void *arg) {
  rank_job<F> *jp = static_cast<rank_job<F> *>(arg);
  size_t r = static_cast<size_t>(redcoll_comm_rank(c) - jp->base);
  try {
    (*jp->fn)(comm_ref(c));
    return REDCOLL_OK;
  } catch (const error &e) {
    jp->thrown[r] = std::current_exception();
    return e.status() != REDCOLL_OK ? e.status() : REDCOLL_EABORTED;
  } catch (...) {
    jp->thrown[r] = std::current_exception();
    return REDCOLL_EABORTED;
  }
}

/* Rethrows the lowest rank's exception other than an abort's echo, else
 * the first echo, else the runner's own failure rc. */
template <class F>
void rethrow_ranks(const rank_job<F> &j, int rc, const char *what) {
  std::exception_ptr echo;
  for (const std::exception_ptr &e : j.thrown) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const error &x) {
      if (x.status() != REDCOLL_EABORTED) throw;
      if (!echo) echo = e;
    }
    // anything else was rethrown by the try above
  }
  if (echo) std::rethrow_exception(echo);
  check(rc, what);
}
}  // namespace detail

/* Runs fn(redcoll::comm_ref) on p ranks, threads of this process
 * (redcoll_threads_run), and returns when all have returned.  fn is called
 * from p threads at once.  A rank that throws aborts the others (their
 * collectives throw REDCOLL_EABORTED); then the exception of the lowest
 * rank that threw something other than that echo is rethrown here.  A
 * failure of the runner itself throws redcoll::error. */
template <class F>
void threads_run(int p, F &&fn) {
  using G = std::remove_reference_t<F>;
  detail::rank_job<G> j{&fn, 0, std::vector<std::exception_ptr>(p > 0 ? static_cast<size_t>(p) : 0u)};
  int rc = redcoll_threads_run(p, detail::rank_entry<G>, &j);
  detail::rethrow_ranks(j, rc, "redcoll_threads_run");
}

/* Hosts x threads (redcoll_hier_run, docs/hier.md): every rank of procs
 * calls this with the same threads; fn(redcoll::comm_ref) runs on threads
 * threads of this process, each a rank of one world of size(procs) *
 * threads, host-major.  Exceptions as threads_run, for this process's
 * threads. */
template <class F>
void hier_run(comm_ref procs, int threads, F &&fn) {
  using G = std::remove_reference_t<F>;
  detail::rank_job<G> j{&fn, procs.rank() * (threads > 0 ? threads : 0),
                        std::vector<std::exception_ptr>(threads > 0 ? static_cast<size_t>(threads) : 0u)};
  int rc = redcoll_hier_run(procs.get(), threads, detail::rank_entry<G>, &j);
  detail::rethrow_ranks(j, rc, "redcoll_hier_run");
}

}  // namespace redcoll

#endif /* REDCOLL_HPP */
