/*
 * The TCP transport: every rank is a process with its own libuv loop, owned
 * by the transport.  A blocking call runs that loop until its operation is
 * done, bounded by the communicator's timeout.
 *
 * Bootstrap.  Every rank needs its rank, the size, and a way to find the
 * others: either the list of every rank's listening address (hosts), or the
 * address of a rendezvous run by rank 0 (master), to which every rank
 * reports the address it listens on and from which it receives everybody's.
 *
 * Connections.  A rank opens a connection to a peer the first time it sends
 * to it; the peer's connection to this rank carries the other direction.
 * While a peer is not listening yet the connection is retried with backoff
 * until the call's timeout.  Only the peers the collectives use are ever
 * connected.
 *
 * Wire format.  Every message is preceded by a 32-byte little-endian header:
 * magic "RDCL" (u32 0x4c434452), version (u8), frame type (u8), reserved
 * (u16, zero), tag (u64), length (u64), channel (u64; the communicator's).
 * Every field is checked.  The sender writes header and payload from its
 * buffer with one system call when the socket takes them.  The receiver
 * reads whatever the socket holds into a 16 KiB buffer per incoming
 * connection (one read for the header and payload of a small message, or
 * for several messages) and copies each payload out to the receive posted
 * on its channel; the rest of a longer payload is read straight into the
 * caller's buffer.  A message that arrives before its receive is posted is
 * kept, whole, in memory of its length, up to unexpected_max bytes per peer
 * (one message is always taken); past that the transport stops reading
 * from that peer until a receive takes some (back-pressure: the rest stays
 * in the socket).  Messages a peer sent before it closed its communicator
 * are all delivered before the close is reported.
 *
 * Strangers.  A connection that is not from a rank of this job (malformed
 * frames, another world size or job id, a failed authentication) is closed
 * and logged at level warn or error; it does not disturb the running
 * collectives.
 *
 * Failures.  A peer whose process dies or whose connection breaks makes every
 * waiting and later call of this rank that needs it return
 * REDCOLL_ETRANSPORT (and the core then breaks the communicators that
 * contain it on every member); a rank that gives up on a communicator
 * (after any error, or redcoll_comm_abort) tells all its peers, whose calls
 * on that communicator then return REDCOLL_EABORTED; a call that waits
 * longer than the timeout returns REDCOLL_ETIMEDOUT.  After an error the
 * communicator is broken; the others over the same connections go on.
 *
 * Waiting.  A blocking call first polls its sockets for at most
 * REDCOLL_SPIN_US microseconds (default 100, 0 turns it off): the first
 * REDCOLL_PAUSE_US (default 1) with the CPU's pause hint unless the ranks
 * on the busiest host outnumber its CPUs, the rest giving the CPU away
 * (sched_yield) between polls; then it sleeps in the kernel until a socket
 * or its deadline wakes it.  Calls on several communicators from several
 * threads take turns running the event loop: one thread polls the sockets
 * for all of them, the others sleep until their operation is done.
 *
 * Nonblocking collectives (redcoll_iallreduce, ...).  The transport posts
 * their exchanges on its loop and finishes them in redcoll_test,
 * redcoll_wait and redcoll_comm_progress, which run the loop (with
 * several threads, one at a time, as for blocking calls: a thread waiting
 * in one wakes when another thread finished one of its requests).
 * redcoll_comm_fd is the loop's descriptor (libuv's uv_backend_fd): a
 * program with its own poll or epoll loop waits for it to be readable, at
 * most redcoll_tcp_comm_poll_timeout milliseconds (libuv's
 * uv_backend_timeout, bounded by the next deadline), and then calls
 * redcoll_comm_progress.  A posted exchange ends as a blocking one would:
 * at the collective's deadline or the wait bound (REDCOLL_ETIMEDOUT), on a
 * cancel (REDCOLL_EABORTED), when a peer it needs is lost
 * (REDCOLL_ETRANSPORT, or the abort that explains it).
 *
 * On the program's libuv loop (redcoll_tcp_config.loop).  Every handle of
 * the transport lives on the program's loop, and nonblocking collectives
 * move on while the program runs it (uv_run): the transport finishes their
 * exchanges after each poll of the loop, and their request callbacks
 * (redcoll_request_set_callback) run from there, between the program's
 * own callbacks.  To keep each turn of the loop short, a connection reads
 * at most 1 MiB per turn and a send hands at most 1 MiB to the socket at
 * once (the loop writes the rest as the socket drains); the core's own work
 * between two exchanges (a reduction of one block) still runs in one
 * piece.  The transport's handles do not keep the loop alive,
 * except while a nonblocking collective is running: uv_run(UV_RUN_DEFAULT)
 * returns once the program's own handles are done and no collective is in
 * flight.  Rules of this mode:
 *   - One thread, the loop's, makes every call on the communicator and on
 *     those made from it (libuv's loops are not thread-safe); the
 *     transport does not offer REDCOLL_TRANSPORT_CAP_THREADS, and so no
 *     progress thread (redcoll_comm_set_progress_thread): the loop is the
 *     progress.  Nor the shared-memory path between ranks of one host
 *     (no_shm): TCP between every pair.
 *   - Creating the communicator blocks for the bootstrap (the rendezvous,
 *     on its own sockets, not the loop): do it before uv_run, or accept
 *     that the loop stalls meanwhile.
 *   - redcoll_test and redcoll_comm_progress never run the loop: they
 *     finish what the loop has done, and may be called from anywhere,
 *     the loop's callbacks included.
 *   - Blocking collectives, redcoll_wait and redcoll_waitall called
 *     outside the loop's callbacks run the loop themselves until they are
 *     done (uv_run(UV_RUN_NOWAIT) turns and a sleep in its descriptor), so
 *     the program's timers and I/O go on meanwhile.  Called from inside a
 *     callback of the loop they must not run it again: a blocking
 *     collective from a request callback, or from a callback that one of
 *     them calls, fails with REDCOLL_ENOTSUP (and, as after any error,
 *     breaks its communicator); from the program's own callbacks, where
 *     the transport cannot tell, it is not allowed (libuv forbids running
 *     a loop from its callbacks).  Use the i-forms with callbacks there.
 *   - redcoll_comm_destroy returns at once and never runs the loop: the
 *     goodbyes go out and the handles close on the loop's next turn, whose
 *     last close callback frees the transport.  Run the loop once more
 *     (uv_run) before uv_loop_close.  A message whose call ended before it
 *     was all written (its deadline, a cancel) is still written from its
 *     copy: the connections then stay until it and the goodbyes are out,
 *     as long as some of it goes every 500 ms, and that uv_run returns
 *     once they close.
 *
 * Signals.  Writing to a socket whose peer is gone raises SIGPIPE; if the
 * program left SIGPIPE at its default action, creating a communicator sets it
 * to SIG_IGN.
 *
 * Errors are printed on stderr naming the rank and the cause;
 * REDCOLL_LOG_LEVEL=none silences them, warn and info say more.
 */
#ifndef REDCOLL_TCP_H
#define REDCOLL_TCP_H

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default of wait_timeout_ms: 3 minutes. */
#define REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS ((uint64_t)180000)

/* The largest number of ranks a TCP communicator takes: a larger
 * REDCOLL_SIZE (or launcher size) is refused at once as a configuration
 * error rather than waited for. */
#define REDCOLL_TCP_MAX_SIZE 65536

typedef struct redcoll_tcp_config {
  /* This rank and the number of ranks: 0 <= rank < size. */
  int rank;
  int size;
  /* Addresses are "host:port" or "[ipv6]:port" (host a name or a numeric
   * address).  hosts: every rank's listening address in rank order,
   * separated by commas or white space.  master: where rank 0 runs the
   * rendezvous.  Exactly one of the two must be set (neither for size 1).
   * The strings are read during redcoll_tcp_comm_create only. */
  const char *hosts;
  const char *master;
  /* Optional: the address to listen on, "host", "host:port", ":port" or
   * "[ipv6]:port" (a port in the string wins over listen_port).  With hosts,
   * the defaults are this rank's entry; with master, the default address is
   * the one this host uses to reach the master (or the interface chosen by
   * ifname) and the default port is 0 (any free port). */
  const char *listen_host;
  int listen_port;
  /* Bound in milliseconds on every wait of every call, the bootstrap
   * included (redcoll.h, REDCOLL_WAIT_FOREVER); 0 means
   * REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS (redcoll_tcp_config_from_env puts
   * REDCOLL_TIMEOUT_MS here); REDCOLL_WAIT_FOREVER, no bound. */
  uint64_t wait_timeout_ms;
  /* Optional interface selection: comma-separated interface names to use,
   * or names prefixed with ^ to exclude ("eth0", "^docker0,lo").  The first
   * address of a matching interface in the master's (or hosts') address
   * family is used. */
  const char *ifname;
  /* Optional shared secret (NULL or empty: none).  With one, every
   * connection between ranks starts with a mutual challenge-response
   * (HMAC-SHA256 with the SHA-256 of the secret as key, over both ranks'
   * random nonces, both ranks and the size); a peer without it, or with
   * another, is refused on both sides (REDCOLL_EPROTO, the reason at log
   * level error).  Every rank of a job must use the same secret or none.
   * The rendezvous itself is not authenticated: a forged address table
   * can only make connections fail.  Needs a build with libsodium;
   * otherwise creating the communicator fails with REDCOLL_ENOTSUP. */
  const char *secret;
  /* Optional job id (0: none): any number every rank of this job shares
   * and no other job uses.  Every connection starts with a HELLO that
   * carries the job's id, and one with another id is refused, as is a
   * rendezvous registration with another configured id.  Without one, the
   * rendezvous (master) draws a random id for the job and hands it out with
   * the address table, and with hosts the id is a digest of the host
   * list's entries as written; ranks of two jobs that share the same list, or that register at
   * the same rendezvous with no id, cannot be told apart. */
  uint64_t job_id;
  /* Bytes of messages that arrived before their receive was posted that
   * this rank keeps per peer (0: 64 MiB; REDCOLL_UNEXPECTED_MAX in the
   * environment).  Past it, the connection from that peer stops reading
   * until receives take some: the peer's sends then wait in the kernel's
   * buffers.  One message is always kept, whatever its size.  A program
   * whose thread waits on one communicator for a message that a peer sends
   * only after more than this much on another communicator that the same
   * thread receives later can stall until its timeout. */
  uint64_t unexpected_max;
  /* Not 0: TCP between every pair of ranks.  0 (the default): on Linux,
   * ranks that share this host (the same kernel boot id, network namespace
   * and user) talk through shared memory (redcoll/shm.h), learned by an
   * exchange of host identities when the communicator is created;
   * REDCOLL_SHM=0 in the environment turns it off as well.  Every rank of
   * a job must make the same choice. */
  int no_shm;
  /* Optional: the program's own libuv loop (a uv_loop_t *; NULL: the
   * transport makes and runs a loop of its own).  With one, every handle
   * of the transport lives on that loop and nonblocking collectives
   * (redcoll_iallreduce, ...) progress while the program runs it, their
   * request callbacks called from it: see "On the program's libuv loop"
   * above.  The loop must outlive the communicator, and the thread that
   * runs it makes every call on the communicator and on those made from
   * it. */
  struct uv_loop_s *loop;
} redcoll_tcp_config;

/* Zeroes cfg and sets rank and size to -1 (unknown). */
REDCOLL_API void redcoll_tcp_config_init(redcoll_tcp_config *cfg);

/* Initializes cfg and fills it from the environment:
 *   rank, size: REDCOLL_RANK / REDCOLL_SIZE, else SLURM_PROCID /
 *               SLURM_NTASKS, OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE,
 *               PMI_RANK / PMI_SIZE, torchrun's RANK / WORLD_SIZE (the
 *               first pair that is complete), else, in a build with PMIx
 *               under a PMIx server (PMIX_NAMESPACE and PMIX_RANK set),
 *               from PMIx; size at most REDCOLL_TCP_MAX_SIZE;
 *   hosts:      REDCOLL_HOSTS;     master: REDCOLL_MASTER, else under
 *               torchrun MASTER_ADDR at MASTER_PORT + 1 (PyTorch's own
 *               rendezvous keeps MASTER_PORT).  With neither, under a
 *               PMIx server (built with PMIx), every rank's address comes
 *               from PMIx: each listens on its first interface that is
 *               not loopback (or as REDCOLL_LISTEN, REDCOLL_IFNAME say)
 *               and the addresses are traded by put, fence and get;
 *   listen:     REDCOLL_LISTEN (host, host:port or :port);
 *   wait_timeout_ms: REDCOLL_TIMEOUT_MS (0 there: REDCOLL_WAIT_FOREVER);
 *   ifname: REDCOLL_IFNAME;
 *   no_shm:     1 if REDCOLL_SHM=0;
 *   secret:     REDCOLL_SECRET;
 *   job_id:     a 64-bit digest (FNV-1a) of REDCOLL_JOB_ID, else of the
 *               job of the launcher that gave rank and size (SLURM_JOB_ID
 *               and SLURM_STEP_ID, OMPI_MCA_ess_base_jobid, or
 *               TORCHELASTIC_RUN_ID and TORCHELASTIC_RESTART_COUNT); 0 if
 *               none.
 * String members point into the environment: keep it unchanged until the
 * communicator is created.  Returns REDCOLL_EINVAL (with a message at log
 * level error) if a variable is malformed or rank/size cannot be found;
 * REDCOLL_OK otherwise. */
REDCOLL_API int redcoll_tcp_config_from_env(redcoll_tcp_config *cfg);

/* Bootstraps this rank (listens, runs or joins the rendezvous, checks the
 * addresses) and creates its communicator.  Blocks until the rendezvous is
 * done (master) or at once (hosts); connections are opened later, on first
 * use.  Returns REDCOLL_EINVAL for a bad configuration, REDCOLL_ETRANSPORT
 * if listening or the rendezvous fails, REDCOLL_ETIMEDOUT if the rendezvous
 * does not finish within the timeout, REDCOLL_ENOMEM.  redcoll_comm_dup,
 * split and create_group make more communicators over the same
 * connections (docs/communicators.md), and collectives on different
 * communicators may run at once from different threads of a process.  A
 * lost peer breaks the calls that need it (and, through the core, the
 * communicators that contain it); an abort or a timeout breaks only its
 * communicator.
 *
 * Each connection between two ranks of one host (the same address at both
 * ends, or loopback) gets a send buffer of 512 KiB (SO_SNDBUF, which Linux
 * caps at net.core.wmem_max and doubles); connections to other hosts keep
 * the kernel's autotuning.  REDCOLL_TCP_SNDBUF in the environment, read
 * here whatever filled cfg, sets every connection's buffer instead (bytes;
 * 0: the kernel's autotuning for all); a value that is not a number of
 * bytes up to 2^30 makes this return REDCOLL_EINVAL. */
REDCOLL_API int redcoll_tcp_comm_create(const redcoll_tcp_config *cfg, redcoll_comm **out);

/* redcoll_tcp_config_from_env + redcoll_tcp_comm_create. */
REDCOLL_API int redcoll_tcp_comm_create_from_env(redcoll_comm **out);

/* Changes the bound on every wait of a TCP communicator, as
 * wait_timeout_ms (0: REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS;
 * REDCOLL_WAIT_FOREVER: none).  redcoll_comm_set_deadline() sets a deadline for each whole
 * collective on top of it.  Returns REDCOLL_EINVAL if c is not a TCP
 * communicator. */
REDCOLL_API int redcoll_tcp_comm_set_wait_timeout(redcoll_comm *c, uint64_t timeout_ms);

/* For a program that polls redcoll_comm_fd(c) in its own loop: how long
 * that poll may sleep, in milliseconds (*ms), before redcoll_comm_progress
 * must be called even if the descriptor stays quiet -- the transport's
 * timers (a connection retried, the deadline of a posted exchange) are not
 * in the descriptor.  -1: no timer, sleep until it is readable.  It is
 * libuv's uv_backend_timeout of the transport's loop, bounded by the next
 * deadline; 0 while a posted exchange is over and waits for that call
 * (a nonblocking collective's yield between two slices of its work).  REDCOLL_EINVAL if c is not a TCP communicator, or takes the
 * shared-memory path between ranks of one host (no_shm 0), which has no
 * descriptor (redcoll_comm_fd is -1 there). */
REDCOLL_API int redcoll_tcp_comm_poll_timeout(redcoll_comm *c, int *ms);

/* The address this rank listens on, as "ip:port" or "[ip6]:port", into buf
 * (truncated to len bytes including the terminating 0).  REDCOLL_EINVAL if
 * c is not a TCP communicator. */
REDCOLL_API int redcoll_tcp_comm_address(const redcoll_comm *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_TCP_H */
