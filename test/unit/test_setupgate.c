/* Unit tests for the per-address setup bound: past the bound a setup
 * waits, a freed slot goes to the oldest waiter of that address only,
 * addresses (and ports) do not share slots, an abandoned waiter leaves
 * the queue without taking a slot, limit 0 bounds nothing, and an
 * address's entry is gone once nothing runs or waits there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "setupgate.h"

static struct sockaddr_storage v4(const char *ip) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
  sin->sin_family = AF_INET;
  assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
  return ss;
}

static struct sockaddr_storage v6(const char *ip) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
  sin6->sin6_family = AF_INET6;
  assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
  return ss;
}

static kr_setup_gate_stats_t stats(kr_setup_gate_t *g) {
  kr_setup_gate_stats_t st;
  kr_setup_gate_stats(g, &st);
  return st;
}

static void test_bound_and_fifo(void **state) {
  (void)state;
  kr_setup_gate_t *g = kr_setup_gate_new(2);
  struct sockaddr_storage a = v4("192.0.2.1");
  kr_setup_waiter_t w[5];
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[0]), 1);
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[1]), 1);
  for (int i = 2; i < 5; i++) assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[i]), 0);
  kr_setup_gate_stats_t st = stats(g);
  assert_int_equal(st.setting_up, 2);
  assert_int_equal(st.waiting, 3);
  assert_int_equal(st.waited, 3);
  assert_int_equal(st.addrs, 1);
  /* a freed slot goes to the oldest waiter, never to a third holder */
  assert_ptr_equal(kr_setup_gate_leave(g, &w[1]), &w[2]);
  assert_int_equal(w[2].holding, 1);
  assert_ptr_equal(kr_setup_gate_leave(g, &w[0]), &w[3]);
  st = stats(g);
  assert_int_equal(st.setting_up, 2);
  assert_int_equal(st.waiting, 1);
  assert_ptr_equal(kr_setup_gate_leave(g, &w[3]), &w[4]);
  assert_null(kr_setup_gate_leave(g, &w[2]));
  assert_int_equal(stats(g).setting_up, 1);
  assert_null(kr_setup_gate_leave(g, &w[4]));
  st = stats(g);
  assert_int_equal(st.setting_up, 0);
  assert_int_equal(st.waiting, 0);
  assert_int_equal(st.addrs, 0);
  /* leaving twice is harmless */
  assert_null(kr_setup_gate_leave(g, &w[4]));
  kr_setup_gate_free(g);
}

static void test_addresses_apart(void **state) {
  (void)state;
  kr_setup_gate_t *g = kr_setup_gate_new(1);
  struct sockaddr_storage a = v4("192.0.2.1"), b = v4("192.0.2.2"), c = v6("2001:db8::1");
  kr_setup_waiter_t wa, wa2, wb, wc, wp;
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &wa), 1);
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &wa2), 0);
  /* another address, the same address on another port, IPv6: not held up */
  assert_int_equal(kr_setup_gate_enter(g, &b, 443, &wb), 1);
  assert_int_equal(kr_setup_gate_enter(g, &a, 80, &wp), 1);
  assert_int_equal(kr_setup_gate_enter(g, &c, 443, &wc), 1);
  assert_int_equal(stats(g).addrs, 4);
  /* b's slot freed: a's waiter still waits */
  assert_null(kr_setup_gate_leave(g, &wb));
  assert_int_equal(wa2.holding, 0);
  assert_ptr_equal(kr_setup_gate_leave(g, &wa), &wa2);
  assert_null(kr_setup_gate_leave(g, &wa2));
  assert_null(kr_setup_gate_leave(g, &wp));
  assert_null(kr_setup_gate_leave(g, &wc));
  assert_int_equal(stats(g).addrs, 0);
  kr_setup_gate_free(g);
}

static void test_abandoned_waiter(void **state) {
  (void)state;
  kr_setup_gate_t *g = kr_setup_gate_new(1);
  struct sockaddr_storage a = v4("198.51.100.7");
  kr_setup_waiter_t w[4];
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[0]), 1);
  for (int i = 1; i < 4; i++) assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[i]), 0);
  /* the middle one and the last one give up: no slot changes hands */
  assert_null(kr_setup_gate_leave(g, &w[2]));
  assert_null(kr_setup_gate_leave(g, &w[3]));
  kr_setup_gate_stats_t st = stats(g);
  assert_int_equal(st.setting_up, 1);
  assert_int_equal(st.waiting, 1);
  assert_ptr_equal(kr_setup_gate_leave(g, &w[0]), &w[1]);
  /* queued again behind the new holder */
  assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[2]), 0);
  assert_ptr_equal(kr_setup_gate_leave(g, &w[1]), &w[2]);
  assert_null(kr_setup_gate_leave(g, &w[2]));
  assert_int_equal(stats(g).addrs, 0);
  kr_setup_gate_free(g);
}

static void test_unbounded(void **state) {
  (void)state;
  kr_setup_gate_t *g = kr_setup_gate_new(0);
  struct sockaddr_storage a = v4("192.0.2.1");
  kr_setup_waiter_t w[100];
  for (int i = 0; i < 100; i++) assert_int_equal(kr_setup_gate_enter(g, &a, 443, &w[i]), 1);
  kr_setup_gate_stats_t st = stats(g);
  assert_int_equal(st.waiting, 0);
  assert_int_equal(st.addrs, 0);
  for (int i = 0; i < 100; i++) assert_null(kr_setup_gate_leave(g, &w[i]));
  kr_setup_gate_free(g);
}

/* Many addresses: the table grows and finds every one again. */
static void test_many_addresses(void **state) {
  (void)state;
  enum { N = 3000 };
  kr_setup_gate_t *g = kr_setup_gate_new(1);
  static kr_setup_waiter_t first[N], second[N];
  struct sockaddr_storage a[N];
  for (int i = 0; i < N; i++) {
    char ip[32];
    snprintf(ip, sizeof ip, "10.%d.%d.1", i / 256, i % 256);
    a[i] = v4(ip);
    assert_int_equal(kr_setup_gate_enter(g, &a[i], 443, &first[i]), 1);
  }
  for (int i = 0; i < N; i++) assert_int_equal(kr_setup_gate_enter(g, &a[i], 443, &second[i]), 0);
  assert_int_equal(stats(g).addrs, N);
  for (int i = 0; i < N; i++) assert_ptr_equal(kr_setup_gate_leave(g, &first[i]), &second[i]);
  for (int i = 0; i < N; i++) assert_null(kr_setup_gate_leave(g, &second[i]));
  assert_int_equal(stats(g).addrs, 0);
  kr_setup_gate_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bound_and_fifo),
      cmocka_unit_test(test_addresses_apart),
      cmocka_unit_test(test_abandoned_waiter),
      cmocka_unit_test(test_unbounded),
      cmocka_unit_test(test_many_addresses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
