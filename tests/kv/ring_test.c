/*
 * ring_test.c — the consistent-hash ring (src/kv/ring.c) on its own: keys
 * spread evenly over the servers; adding a server moves keys only to it,
 * removing one moves only its keys; the list's order does not matter; the
 * keys of one shard still spread over its table's buckets; bad lists are
 * refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "kv/ring.h"
#include "kv/table.h"

#define NKEYS 30000


static struct kv_ring r3, r4, r2, r3b;
static unsigned on3[NKEYS];

static int key(char *k, int i)
{
	return snprintf(k, 32, "user:%d", i);
}

int main(void)
{
	const char *three[] = { "10.0.0.1:18860", "10.0.0.2:18860", "10.0.0.3:18860" };
	const char *four[] = { "10.0.0.1:18860", "10.0.0.2:18860", "10.0.0.3:18860", "10.0.0.4:18860" };
	const char *without_second[] = { "10.0.0.1:18860", "10.0.0.3:18860" };
	const char *reordered[] = { "10.0.0.3:18860", "10.0.0.1:18860", "10.0.0.2:18860" };
	unsigned count[4] = { 0 }, moved = 0, moved_elsewhere = 0, stayed_wrong = 0, order_differs = 0;
	static unsigned buckets[1024];
	char k[32];

	CHECK(kv_ring_build(&r3, three, 3) == 0);
	CHECK(kv_ring_build(&r4, four, 4) == 0);
	CHECK(kv_ring_build(&r2, without_second, 2) == 0);
	CHECK(kv_ring_build(&r3b, reordered, 3) == 0);
	for (int i = 0; i < NKEYS; i++) {
		int n = key(k, i);
		unsigned s3 = kv_ring_server(&r3, k, (uint32_t)n), s4 = kv_ring_server(&r4, k, (uint32_t)n);
		unsigned s2 = kv_ring_server(&r2, k, (uint32_t)n);
		on3[i] = s3;
		count[s3]++;
		if (s4 != s3) {
			moved++;
			moved_elsewhere += s4 != 3;     /* only to the new server */
		}
		/* Without server 1: keys of 0 and 2 stay (2 is index 1 there). */
		if ((s3 == 0 && s2 != 0) || (s3 == 2 && s2 != 1))
			stayed_wrong++;
		if (strcmp(three[s3], reordered[kv_ring_server(&r3b, k, (uint32_t)n)]))
			order_differs++;
		if (s3 == 0)
			buckets[kv_home_bucket(kv_hash((const uint8_t *)k, (uint32_t)n), 1024)]++;
	}
	for (int s = 0; s < 3; s++) {
		double share = (double)count[s] / NKEYS;
		printf("server %d: %.1f%% of the keys\n", s, 100 * share);
		CHECK(share > 0.28 && share < 0.39);
	}
	printf("adding a fourth server moved %.1f%% of the keys, %u elsewhere than to it\n", 100.0 * moved / NKEYS,
	       moved_elsewhere);
	CHECK(moved > NKEYS * 0.18 && moved < NKEYS * 0.32);
	CHECK(moved_elsewhere == 0);
	CHECK(stayed_wrong == 0);
	CHECK(order_differs == 0);
	/* One shard's keys over its table's buckets: none far above the mean. */
	unsigned max = 0;
	for (int b = 0; b < 1024; b++)
		max = buckets[b] > max ? buckets[b] : max;
	printf("shard 0: %u keys over 1024 buckets, at most %u in one\n", count[0], max);
	CHECK(max < 4.0 * count[0] / 1024 + 4);
	/* Bad lists. */
	const char *dup[] = { "a:1", "b:1", "a:1" };
	CHECK(kv_ring_build(&r3, dup, 3) == EINVAL);
	CHECK(kv_ring_build(&r3, three, 0) == EINVAL);
	CHECK(kv_ring_build(&r3, three, KV_RING_MAX_SERVERS + 1) == EINVAL);
	if (check_failures)
		return check_exit("kv_ring_test");
	printf("ring: ok\n");
	return 0;
}
