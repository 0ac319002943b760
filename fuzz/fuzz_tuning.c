/*
 * libFuzzer target: the tuning-file parser (what REDCOLL_TUNING_FILE and
 * redcoll_comm_load_tuning read, redcoll-tune writes).  The input is the
 * file; it is read for a transport named "tcp" and for none.  An entry that
 * is accepted gives alpha, beta, gamma and the intra-host alpha and beta as
 * finite numbers >= 0; every input gives OK, 1 (no entry applies) or
 * REDCOLL_EINVAL.  Built and run by scripts/fuzz.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "select/cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char path[] = "/tmp/redcoll-fuzz-tuning-XXXXXX";

static void remove_file(void) { unlink(path); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("REDCOLL_LOG_LEVEL", "none", 1); /* malformed lines are logged */
  int fd = mkstemp(path);
  if (fd < 0) abort();
  close(fd);
  atexit(remove_file);
  return 0;
}

static int valid(double v) { return isfinite(v) && v >= 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "w");
  if (f == NULL) abort();
  if (size > 0 && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  const char *names[2] = {"tcp", NULL};
  for (int i = 0; i < 2; i++) {
    redcoll__cost_model cm = {-1, -1, -1};
    double local[2] = {-1, -1};
    int rc = redcoll__tuning_read(path, names[i], &cm, local, NULL);
    if (rc == REDCOLL_OK) {
      if (!valid(cm.alpha) || !valid(cm.beta) || !valid(cm.gamma) || !valid(local[0]) ||
          !valid(local[1]))
        abort();
    } else if (rc != 1 && rc != REDCOLL_EINVAL) {
      abort();
    }
  }
  return 0;
}
