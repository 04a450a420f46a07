/*
 * stats_file.h — the published counters of a running device:
 * softrnic-<pid> in the user's runtime directory (runtime_dir.h), one
 * struct srt_stats_file (runtime.h), mode 0600, written by the device's
 * progress thread and read by `softrnic devices/stats` and tests.
 *
 * Readers may see a record mid-update (no seqlock): each counter is an
 * aligned uint64 so it is never torn on the platforms we run on, but two
 * counters may come from updates 100 ms apart.  Good enough for a CLI.
 *
 * Whose: a reader sees the devices of its own user (its runtime
 * directory); root also sees other users' at the default places
 * (srt_runtime_dirs_of_others).  A file is removed when its device
 * closes, when its process exits without closing it (device.c), or, if
 * the process died, by the next device of the user to open
 * (srt_stats_reclaim) or the next reader.
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
                                   7: mr_fault, completion_flushes */
#define SRT_STATS_PREFIX "softrnic-"

/* Writer side. */
struct srt_stats_writer {
	struct srt_stats_file *map;
	int dirfd;                      /* the device's runtime directory, borrowed;
	                                   -1: no file (map is private memory) */
	char name[32];                  /* softrnic-<pid>; empty once removed */
	ino_t ino;
};
/* Publishes in dirfd (-1: nowhere).  0, or the errno of a file that could
 * not be made (a FIFO or link of the user's at the name: EEXIST).  Either
 * way w->map holds the counters (in private memory when there is no file),
 * so SOFTRNIC_STATS_AT_EXIT still has them. */
int srt_stats_create(struct srt_stats_writer *w, int dirfd, const char *name, const uint8_t gid[16]);
void srt_stats_publish(struct srt_stats_writer *w, const struct rnic_counters *c,
		       const struct srt_named_counter *agent, size_t n_agent, const struct rnic_qp_info *qps,
		       size_t n_qp, size_t qp_total, const struct srt_runtime_counters *rt, uint64_t now_ns);
/* Removes the file, keeping the mapping (at exit the progress thread may
 * still publish into it). */
void srt_stats_unlink(struct srt_stats_writer *w);
/* Removes the file and the mapping. */
void srt_stats_remove(struct srt_stats_writer *w);
/* A device opening: removes the stats files in dirfd whose process no
 * longer runs as us (srt_process_runs_as). */
void srt_stats_reclaim(int dirfd);

/* Reader side.  Reads the record of process `pid`: 0; ESRCH if the
 * process has gone (a stale file of ours is removed); EACCES if it runs
 * as another user (and we are not root: its files are not ours to read);
 * ENOENT if it is ours (or we are root) but has no device; EINVAL if the
 * name holds no softrnic stats file. */
int srt_stats_read(pid_t pid, struct srt_stats_file *out);

/* Calls fn for each live device of ours (of everyone's, for root),
 * ascending pid, removing our stale files.  Returns the number of live
 * devices. */
int srt_stats_foreach(void (*fn)(void *arg, const struct srt_stats_file *s), void *arg);

#endif
