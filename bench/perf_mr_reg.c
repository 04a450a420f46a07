/*
 * perf_mr_reg.c — how long ibv_reg_mr takes for a large region (1 GiB
 * by default).
 *
 * Uses only the verbs API, so it measures whatever libibverbs.so.1 it is
 * run with (softrnic's, linked here; or a real one by LD_LIBRARY_PATH).
 * softrnic neither pins nor walks the pages of a region (a software NIC
 * reads process memory directly; IBV_ACCESS_* checks happen per packet),
 * so registration costs the same for 4 KiB and for 1 GiB; the program
 * shows that, for untouched and for touched memory, and also times
 * deregistration.
 *
 *   perf_mr_reg [GIB] [REPEATS]        defaults: 1 GiB, 20 repeats
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <infiniband/verbs.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median registration and deregistration time of [buf, buf+len). */
static int time_region(struct ibv_pd *pd, void *buf, size_t len, int repeats, const char *what)
{
	double *reg = calloc((size_t)repeats, sizeof(double));
	double *dereg = calloc((size_t)repeats, sizeof(double));
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	if (!reg || !dereg)
		return 1;
	for (int i = 0; i < repeats; i++) {
		double t0 = now_us();
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);
		double t1 = now_us();
		if (!mr) {
			perror("ibv_reg_mr");
			return 1;
		}
		if (ibv_dereg_mr(mr)) {
			perror("ibv_dereg_mr");
			return 1;
		}
		reg[i] = t1 - t0;
		dereg[i] = now_us() - t1;
	}
	qsort(reg, (size_t)repeats, sizeof(double), cmp_double);
	qsort(dereg, (size_t)repeats, sizeof(double), cmp_double);
	printf("%-28s %8.2f GiB   reg median %9.2f us (min %.2f, max %.2f)   dereg median %9.2f us\n", what,
	       (double)len / (1 << 30), reg[repeats / 2], reg[0], reg[repeats - 1], dereg[repeats / 2]);
	free(reg);
	free(dereg);
	return 0;
}

int main(int argc, char **argv)
{
	double gib = argc > 1 ? atof(argv[1]) : 1.0;
	int repeats = argc > 2 ? atoi(argv[2]) : 20;
	size_t len = (size_t)(gib * (double)(1ull << 30));
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int n = 0;

	if (len == 0 || repeats < 1) {
		fprintf(stderr, "usage: perf_mr_reg [GIB] [REPEATS]\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "perf_mr_reg: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		perror("perf_mr_reg: open device / alloc pd");
		return 1;
	}
	printf("device %s\n", ibv_get_device_name(list[0]));

	/* Untouched: the kernel has not even backed it with pages yet. */
	void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (time_region(pd, buf, len, repeats, "untouched (mmap)"))
		return 1;
	memset(buf, 0x5a, len);
	if (time_region(pd, buf, len, repeats, "touched (resident)"))
		return 1;
	if (time_region(pd, buf, 4096, repeats, "one page, for comparison"))
		return 1;
	munmap(buf, len);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
