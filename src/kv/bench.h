/*
 * bench.h — `softrnic-kv bench` (bench.c), the load generator that
 * bench/kv_vs_redis.sh runs beside redis-benchmark.
 */
#ifndef SOFTRNIC_KV_BENCH_H
#define SOFTRNIC_KV_BENCH_H

/* argv[0] is "bench"; the exit status (0, or 2 with a message). */
int kv_bench_main(int argc, char **argv);

#endif
