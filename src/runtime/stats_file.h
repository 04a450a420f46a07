/*
 * stats_file.h — the published counters of a running device:
 * /dev/shm/softrnic-<pid>, one struct srt_stats_file (runtime.h), written
 * by the device's progress thread and read by `softrnic devices/stats` and
 * tests.
 *
 * Readers may see a record mid-update (no seqlock): each counter is an
 * aligned uint64 so it is never torn on the platforms we run on, but two
 * counters may come from updates 100 ms apart.  Good enough for a CLI.
 */
#ifndef SOFTRNIC_RUNTIME_STATS_FILE_H
#define SOFTRNIC_RUNTIME_STATS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runtime/runtime.h"

#define SRT_STATS_VERSION 7u    /* 2: the agent's counters; 3: QPs, CC counters;
                                   4: the runtime's counters (faults, capture);
                                   5: the message path's put-off reads;
                                   6: its payloads carried in the ring;
                                   7: mr_fault */
#define SRT_STATS_DIR "/dev/shm"
#define SRT_STATS_PREFIX "softrnic-"

/* Writer side. */
struct srt_stats_writer {
	struct srt_stats_file *map;
	char path[64];
};
int srt_stats_create(struct srt_stats_writer *w, const char *name, const uint8_t gid[16]);
void srt_stats_publish(struct srt_stats_writer *w, const struct rnic_counters *c,
		       const struct srt_named_counter *agent, size_t n_agent, const struct rnic_qp_info *qps,
		       size_t n_qp, size_t qp_total, const struct srt_runtime_counters *rt, uint64_t now_ns);
void srt_stats_remove(struct srt_stats_writer *w);

/* Reader side.  Reads the record of process `pid`: 0, ENOENT if there is
 * none, ESRCH if the file is stale (process gone; the file is removed),
 * EINVAL if it is not a softrnic stats file. */
int srt_stats_read(pid_t pid, struct srt_stats_file *out);

/* Calls fn for each live device (ascending pid), removing stale files.
 * Returns the number of live devices. */
int srt_stats_foreach(void (*fn)(void *arg, const struct srt_stats_file *s), void *arg);

#endif
