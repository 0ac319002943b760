/* Status, dtype, collective and algorithm names: the tables and parsers. */
#include "internal.h"
#include "test.h"

static void names_and_tables(void) {
  CHECK_INT(REDCOLL_OK, 0);
  int codes[] = {REDCOLL_EINVAL, REDCOLL_ENOMEM, REDCOLL_ETRANSPORT, REDCOLL_ETIMEDOUT,
                 REDCOLL_EMISMATCH, REDCOLL_EABORTED, REDCOLL_EPROTO, REDCOLL_ENOTSUP,
                 REDCOLL_EDEADLOCK};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    CHECK(codes[i] < 0);
    CHECK(strcmp(redcoll_strerror(codes[i]), "unknown status") != 0);
    for (size_t j = 0; j < i; j++) CHECK(codes[i] != codes[j]);
  }
  CHECK(strcmp(redcoll_status_name(REDCOLL_EMISMATCH), "REDCOLL_EMISMATCH") == 0);
  CHECK(strcmp(redcoll_status_name(REDCOLL_OK), "REDCOLL_OK") == 0);
  CHECK(strcmp(redcoll_strerror(12345), "unknown status") == 0);
  CHECK(strcmp(redcoll_status_name(-77), "REDCOLL_UNKNOWN") == 0);

  /* every algorithm name parses back to itself, and is lowercase_with_underscores */
  for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
    const char *n = redcoll_algo_name((redcoll_algo)a);
    redcoll_algo back;
    CHECK(n != NULL);
    CHECK_INT(redcoll_algo_parse(n, &back), REDCOLL_OK);
    CHECK_INT(back, a);
    for (const char *s = n; *s; s++) CHECK((*s >= 'a' && *s <= 'z') || *s == '_' || (*s >= '0' && *s <= '9'));
  }
  redcoll_algo a;
  CHECK_INT(redcoll_algo_parse("no_such_algo", &a), REDCOLL_EINVAL);
  CHECK_INT(redcoll_algo_parse(NULL, &a), REDCOLL_EINVAL);
  CHECK(redcoll_algo_name(REDCOLL_ALGO_COUNT) == NULL);
  CHECK(strcmp(redcoll_algo_name(REDCOLL_ALGO_ELIMINATION_2TO1), "elimination_2to1") == 0);

  for (int c = 0; c < REDCOLL_COLL_COUNT; c++) {
    redcoll_coll back;
    CHECK_INT(redcoll_coll_parse(redcoll_coll_name((redcoll_coll)c), &back), REDCOLL_OK);
    CHECK_INT(back, c);
  }
  redcoll_coll cc;
  CHECK_INT(redcoll_coll_parse("allreduc", &cc), REDCOLL_EINVAL);
  CHECK(redcoll_coll_name(REDCOLL_COLL_COUNT) == NULL);

  size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int d = 0; d < REDCOLL_CUSTOM; d++) CHECK_INT(redcoll_dtype_size((redcoll_dtype)d), sizes[d]);
  CHECK_INT(redcoll_dtype_size(REDCOLL_CUSTOM), 0);
  CHECK(strcmp(redcoll_dtype_name(REDCOLL_BFLOAT16), "bfloat16") == 0);

  /* AUTO is supported everywhere; linear allreduce keeps rank order */
  CHECK_INT(redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_AUTO), 1);
  CHECK_INT(redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR), 1);
  CHECK_INT(redcoll_algo_is_supported(REDCOLL_COLL_BARRIER, REDCOLL_ALGO_RING_SEQUENTIAL), 0);
}

TEST_MAIN(TEST(names_and_tables))
