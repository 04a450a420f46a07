/*
 * shm_baseline.c — what two processes on this machine can do through
 * shared memory, the limit the host-local path (src/runtime/local_path.c)
 * is measured against (bench/local_compare.sh):
 *   shm_baseline pingpong [ITERS]   round trip of a flag between two
 *                                   processes busy-polling one cache line
 *                                   each (µs, median of 5 runs of ITERS)
 *   shm_baseline copy [MIB]         payload through a shared ring, in and
 *                                   out (two copies, as the local path
 *                                   makes): 64 KiB chunks, GB/s
 *   shm_baseline cma [MIB]          one copy, straight from this process's
 *                                   buffer into a child's with
 *                                   process_vm_writev (Linux's cross-memory
 *                                   attach, as UCX's cma transport): 64 KiB
 *                                   writes into a 4 MiB target, GB/s
 * Prints one line: "pingpong_rtt_us X", "copy_gbps X" or "cma_gbps X".
 */

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536u
#define RING_CHUNKS 64u

struct shared {
	_Alignas(64) _Atomic uint64_t ping;
	_Alignas(64) _Atomic uint64_t pong;
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) _Atomic uint64_t tail;
	_Alignas(64) uint8_t ring[RING_CHUNKS][CHUNK];
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pingpong(struct shared *s, uint64_t iters)
{
	atomic_store(&s->ping, 0);
	atomic_store(&s->pong, 0);
	pid_t child = fork();

	if (child == 0) {
		for (uint64_t i = 1; i <= iters; i++) {
			while (atomic_load_explicit(&s->ping, memory_order_acquire) != i)
				;
			atomic_store_explicit(&s->pong, i, memory_order_release);
		}
		_exit(0);
	}
	double t0 = now_s();
	for (uint64_t i = 1; i <= iters; i++) {
		atomic_store_explicit(&s->ping, i, memory_order_release);
		while (atomic_load_explicit(&s->pong, memory_order_acquire) != i)
			;
	}
	double t = now_s() - t0;
	waitpid(child, NULL, 0);
	return t / (double)iters * 1e6;
}

static double copy(struct shared *s, uint64_t mib)
{
	uint64_t chunks = mib * 1024 * 1024 / CHUNK;
	uint8_t *src = malloc(CHUNK), *dst = malloc(CHUNK);

	memset(src, 7, CHUNK);
	atomic_store(&s->head, 0);
	atomic_store(&s->tail, 0);
	pid_t child = fork();
	if (child == 0) {
		for (uint64_t i = 0; i < chunks; i++) {
			while (atomic_load_explicit(&s->head, memory_order_acquire) == i)
				;
			memcpy(dst, s->ring[i % RING_CHUNKS], CHUNK);     /* copy out */
			atomic_store_explicit(&s->tail, i + 1, memory_order_release);
		}
		_exit(dst[CHUNK - 1] == 7 ? 0 : 1);
	}
	double t0 = now_s();
	for (uint64_t i = 0; i < chunks; i++) {
		while (i - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING_CHUNKS)
			;
		memcpy(s->ring[i % RING_CHUNKS], src, CHUNK);             /* copy in */
		atomic_store_explicit(&s->head, i + 1, memory_order_release);
	}
	while (atomic_load_explicit(&s->tail, memory_order_acquire) != chunks)
		;
	double t = now_s() - t0;
	waitpid(child, NULL, 0);
	free(src);
	free(dst);
	return (double)chunks * CHUNK / t / 1e9;
}

/* The child only holds the target buffer (its address is known to the
 * parent: the same as in the parent after fork) until told to check it;
 * the parent writes into it with process_vm_writev, one system call and
 * one copy per 64 KiB, as a one-copy transport would. */
#define CMA_TARGET (4u << 20)
static double cma(uint64_t mib)
{
	uint64_t writes = mib * 1024 * 1024 / CHUNK;
	uint8_t *src = malloc(CHUNK), *target = malloc(CMA_TARGET);
	int go[2];

	if (!src || !target || pipe(go))
		return -1;
	memset(src, 9, CHUNK);
	memset(target, 0, CMA_TARGET);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(target[CMA_TARGET - 1] == 9 ? 0 : 1);     /* the writes landed */
	}
	close(go[0]);
	double t0 = now_s();
	for (uint64_t i = 0; i < writes; i++) {
		struct iovec l = { src, CHUNK };
		struct iovec r = { target + (i * CHUNK) % CMA_TARGET, CHUNK };
		if (process_vm_writev(child, &l, 1, &r, 1, 0) != (ssize_t)CHUNK) {
			perror("process_vm_writev");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return -1;
		}
	}
	double t = now_s() - t0;
	int st = 0;
	if (write(go[1], "x", 1) != 1)
		st = -1;
	close(go[1]);
	waitpid(child, &st, 0);
	free(src);
	free(target);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return (double)writes * CHUNK / t / 1e9;
}

int main(int argc, char **argv)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED || argc < 2) {
		fprintf(stderr, "usage: shm_baseline pingpong [ITERS] | copy [MIB] | cma [MIB]\n");
		return 2;
	}
	if (!strcmp(argv[1], "pingpong")) {
		uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 200000;
		double r[5];

		for (int i = 0; i < 5; i++)
			r[i] = pingpong(s, iters);
		qsort(r, 5, sizeof(r[0]), cmp_double);
		printf("pingpong_rtt_us %.3f\n", r[2]);
		return 0;
	}
	if (!strcmp(argv[1], "cma")) {
		double g = cma(argc > 2 ? strtoull(argv[2], NULL, 0) : 4096);
		if (g < 0)
			return 1;
		printf("cma_gbps %.2f\n", g);
		return 0;
	}
	if (!strcmp(argv[1], "copy")) {
		printf("copy_gbps %.2f\n", copy(s, argc > 2 ? strtoull(argv[2], NULL, 0) : 4096));
		return 0;
	}
	fprintf(stderr, "shm_baseline: unknown mode %s\n", argv[1]);
	return 2;
}
