/*
 * test_mem_guard.c — the guarded operations of runtime/mem_guard.h on
 * their own: copies of every size class and alignment give memcpy's
 * bytes and touch nothing else; a copy, gather, touch or ICRC that meets
 * a page gone (PROT_NONE or unmapped) or read-only (for a write) returns
 * false, with the bytes before the fault copied, from any thread; and
 * srt_mem_check's answers at the edges (wrap-around, length 0, a hole).
 * A release build on x86-64 runs the fixup routines, the sanitizer build
 * the sigsetjmp guard: CTest runs both builds' copy of this test.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/mem_guard.h"

#include "../check.h"

static size_t page;

/* Three pages: [0] and [1] read-write, [2] with protection `last`. */
static uint8_t *three_pages(int last)
{
	uint8_t *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
	REQUIRE(mprotect(p + 2 * page, page, last) == 0, "mprotect: %s", strerror(errno));
	return p;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed);
}

/* Every size class (below 128 bytes, 128 to 2 KiB, from 2 KiB) and
 * misalignments of both sides: memcpy's result, nothing written outside. */
static void copies_are_memcpy(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128,
					 129, 191, 255, 256, 1000, 1024, 2047, 2048, 2049, 4096, 4100, 65536, 70001 };
	size_t cap = 70001 + 256;
	uint8_t *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);

	REQUIRE(src && dst && want, "malloc");
	fill(src, cap, 3);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (unsigned so = 0; so < 64; so += 13) {
			for (unsigned d = 0; d < 64; d += 17) {
				size_t n = sizes[k];

				memset(dst, 0xee, cap);
				memset(want, 0xee, cap);
				memcpy(want + d, src + so, n);
				REQUIRE(srt_guard_copy(dst + d, src + so, n), "copy of %zu failed", n);
				REQUIRE(memcmp(dst, want, cap) == 0, "copy of %zu bytes (src +%u, dst +%u) differs", n,
				      so, d);
			}
		}
	}
	/* The 8-byte store of an aligned destination. */
	uint64_t v = 0, w = 0x1122334455667788ull;
	REQUIRE(srt_guard_copy(&v, &w, 8) && v == w, "copy8");
	free(src);
	free(dst);
	free(want);
}

/* A copy that runs into page [2] stops there and says so; what lay before
 * it was copied.  (Every range stays inside the three pages: past them
 * lies memory that is not the test's.) */
static void copies_stop_at_a_fault(void)
{
	static const size_t sizes[] = { 2, 6, 12, 40, 100, 1000, 3000, 6000 };
	uint8_t *gone = three_pages(PROT_NONE), *ro = three_pages(PROT_READ);
	uint8_t *buf = malloc(3 * page);

	REQUIRE(buf, "malloc");
	fill(gone, 2 * page, 5);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		const uint8_t *from = gone + 2 * page - n / 2;     /* half of it in the gone page */

		memset(buf, 0, 3 * page);
		REQUIRE(!srt_guard_copy(buf, from, n), "copy of %zu from a gone page succeeded", n);
		/* The source's readable part may be copied (all, some, or none
		 * of it, as far as the copy got): nothing else. */
		for (size_t i = 0; i < n / 2; i++)
			REQUIRE(buf[i] == 0 || buf[i] == from[i], "copy of %zu: byte %zu is neither old nor new", n, i);
		for (size_t i = n / 2; i < 3 * page; i++)
			REQUIRE(buf[i] == 0, "copy of %zu: byte %zu written past the fault", n, i);
		REQUIRE(!srt_guard_copy(ro + 2 * page - n / 2, buf, n), "copy of %zu into a read-only page succeeded", n);
		REQUIRE(!srt_guard_copy(gone + 2 * page - n / 2, buf, n), "copy of %zu into a gone page succeeded", n);
	}
	uint64_t v = 0;
	REQUIRE(!srt_guard_copy(&v, gone + 2 * page, 8), "copy8 from a gone page");
	REQUIRE(!srt_guard_copy(ro + 2 * page, &v, 8), "copy8 into a read-only page");

	/* gather: the third piece is gone. */
	struct wire_piece pc[3] = { { gone, 100 }, { gone + page, 200 }, { gone + 2 * page + 8, 50 } };
	REQUIRE(!srt_guard_gather(buf, pc, 3), "gather over a gone piece");
	REQUIRE(srt_guard_gather(buf, pc, 2) && memcmp(buf + 100, gone + page, 200) == 0, "gather");

	/* touch: reading a gone page, writing a read-only one. */
	REQUIRE(srt_guard_touch(gone, 2 * page, true), "touch of good pages");
	REQUIRE(!srt_guard_touch(gone + page + 10, page, false), "read touch into a gone page");
	REQUIRE(!srt_guard_touch(gone + 2 * page + 100, 1, false), "read touch of one gone byte");
	REQUIRE(srt_guard_touch(ro, 3 * page, false), "read touch of read-only pages");
	REQUIRE(!srt_guard_touch(ro + page, page + 1, true), "write touch into a read-only page");
	REQUIRE(gone[page + 10] == (uint8_t)((page + 10) * 131 + 5), "a write touch changed a byte");

	/* ICRC over pieces: the same as unguarded, or false. */
	struct wire_ip ip;
	uint32_t crc = 0;
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	REQUIRE(srt_guard_icrc(&ip, 4791, pc, 2, &crc) && crc == wire_icrc_udp_payload_pieces(&ip, 4791, pc, 2),
	      "icrc");
	REQUIRE(!srt_guard_icrc(&ip, 4791, pc, 3, &crc), "icrc over a gone piece");

	/* An unmapped page, not only a PROT_NONE one. */
	REQUIRE(munmap(gone + 2 * page, page) == 0, "munmap");
	REQUIRE(!srt_guard_copy(buf, gone + 2 * page - 4, 8), "copy from an unmapped page");
	REQUIRE(!srt_guard_touch(gone + 2 * page, 1, false), "touch of an unmapped page");
	REQUIRE(munmap(gone, 2 * page) == 0 && munmap(ro, 3 * page) == 0, "munmap");
	free(buf);
}

static void *on_a_thread(void *arg)
{
	(void)arg;
	copies_stop_at_a_fault();
	return NULL;
}

static void registration_edges(void)
{
	uint8_t *m = three_pages(PROT_READ);

	REQUIRE(srt_mem_check(NULL, 0, true) == 0, "length 0");
	REQUIRE(srt_mem_check((void *)(uintptr_t)-4096, 8192, false) == EINVAL, "a range that wraps");
	REQUIRE(srt_mem_check(m, 2 * page, true) == 0, "read-write pages");
	REQUIRE(srt_mem_check(m, 3 * page, false) == 0, "read-only page for reading");
	REQUIRE(srt_mem_check(m, 3 * page, true) == EFAULT, "read-only page for writing");
	REQUIRE(munmap(m + page, page) == 0, "munmap");
	REQUIRE(srt_mem_check(m, 3 * page, false) == EFAULT, "a hole");
	REQUIRE(munmap(m, page) == 0 && munmap(m + 2 * page, page) == 0, "munmap");
}

int main(void)
{
	pthread_t t;

	page = (size_t)sysconf(_SC_PAGESIZE);
	REQUIRE(srt_guard_install() == 0, "install");
	copies_are_memcpy();
	copies_stop_at_a_fault();
	REQUIRE(pthread_create(&t, NULL, on_a_thread, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
	registration_edges();
	printf("test_mem_guard: passed\n");
	return 0;
}
