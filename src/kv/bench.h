/*
 * bench.h — `softrnic-kv bench` (bench.c), the load generator that
 * bench/kv_vs_redis.sh runs beside redis-benchmark.
 */
#ifndef SOFTRNIC_KV_BENCH_H
#define SOFTRNIC_KV_BENCH_H

#include "tools/cli_parse.h"

/* The bench command, its options parsed (kv_cli.c's table); the exit
 * status (0, or 2 with a message). */
int kv_bench_main(const struct cli_args *a);

#endif
